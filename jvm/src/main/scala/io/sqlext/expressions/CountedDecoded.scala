package io.sqlext.expressions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodeGenerator, ExprCode}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.types.DataType
import org.apache.spark.util.LongAccumulator

/**
 * `child` (a struct parsed in PERMISSIVE mode, its corrupt-record field at `corruptOrdinal`)
 * when it decoded, else NULL; each NULL (nothing parsed, or a corrupt record) counted in
 * `counter` (a stream's, read by SHOW STREAMS) and each task's count logged, so what a
 * following `IS NOT NULL` filter leaves out is never silently lost.
 *
 * Why a projection and not a counting filter: a filter over the parsed column is pushed below
 * the projection that parses, with the parse substituted into it, and the message is then
 * parsed twice (or three times). Non-deterministic (it counts), this projection is neither
 * collapsed into the projections above it nor passed by the filters above it, so every message
 * is parsed once, in generated code.
 */
case class CountedDecoded(child: Expression, corruptOrdinal: Int,
    counter: Option[LongAccumulator], what: String)
    extends UnaryExpression {

  override def dataType: DataType = child.dataType
  override def nullable: Boolean = true
  override lazy val deterministic: Boolean = false

  @transient private lazy val rejections = new TaskRejections(n => s"sql_ext: $n $what")

  /** Counts one message that did not decode (called by the generated code too). */
  def reject(): Unit = {
    rejections.add()
    counter.foreach(_.add(1))
  }

  override def eval(input: InternalRow): Any = {
    val parsed = child.eval(input).asInstanceOf[InternalRow]
    if (parsed == null || !parsed.isNullAt(corruptOrdinal)) { reject(); null }
    else parsed
  }

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val parsed = child.genCode(ctx)
    val self = ctx.addReferenceObj("countedDecoded", this, getClass.getName)
    val javaType = CodeGenerator.javaType(dataType)
    ev.copy(code = code"""
      ${parsed.code}
      boolean ${ev.isNull} = ${parsed.isNull} || !${parsed.value}.isNullAt($corruptOrdinal);
      $javaType ${ev.value} = ${CodeGenerator.defaultValue(dataType)};
      if (${ev.isNull}) {
        $self.reject();
      } else {
        ${ev.value} = ${parsed.value};
      }""")
  }

  override protected def withNewChildInternal(newChild: Expression): CountedDecoded =
    copy(child = newChild)
}
