package io.sqlext.access

import scala.util.Try

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * How the access checks read a plan: every node of it, and the values a node holds.
 *
 * `nodes` enters every nested plan: children, subqueries (in any expression), and plans that
 * nodes keep as fields (a view's query, MERGE's source, a write's target, a CTE's definitions),
 * so that no plan shape hides a table or a path from the checks. A [[ServerRead]] is the
 * server's own read (window_state()'s of a checkpoint): its inside is not the user's.
 */
private[access] object PlanWalk {
  def nodes(plan: LogicalPlan): Seq[LogicalPlan] = {
    val found = Seq.newBuilder[LogicalPlan]
    def walk(node: LogicalPlan): Unit = node match {
      case _: ServerRead =>
      case _ =>
        found += node
        node.subqueries.foreach(walk)
        node.children.foreach(walk)
        scan(node.productIterator.toSeq, depth = 3) { case inner: LogicalPlan => inner }
          .filterNot(inner => node.children.exists(_ eq inner)).foreach(walk)
    }
    walk(plan)
    found.result()
  }

  /** A reflective read of the member `name` of `target` (plan classes that are private to
   *  Spark, Hive or Delta, or differ between versions), None where it has none. */
  def member(target: Any, name: String): Option[Any] =
    if (target == null) None
    else Try(target.getClass.getMethod(name).invoke(target)).toOption

  /** The values `pick` finds in `value`, looking through options, collections, maps and the
   *  fields of case classes, at most `depth` levels down; plans and expressions are not
   *  entered (`nodes` walks plans, and expressions hold no table or path). */
  def scan[T](value: Any, depth: Int = 3)(pick: PartialFunction[Any, T]): Seq[T] = value match {
    case v if pick.isDefinedAt(v) => Seq(pick(v))
    case _ if depth < 0 || value == null => Nil
    case _: LogicalPlan | _: Expression | _: String => Nil
    case o: Option[_] => o.toSeq.flatMap(scan(_, depth)(pick))
    case m: scala.collection.Map[_, _] => m.values.toSeq.flatMap(scan(_, depth - 1)(pick))
    case i: Iterable[_] => i.toSeq.flatMap(scan(_, depth - 1)(pick))
    case p: Product => p.productIterator.toSeq.flatMap(scan(_, depth - 1)(pick))
    case _ => Nil
  }
}
