package io.sqlext.expressions

import java.util.concurrent.ConcurrentHashMap

import org.apache.hadoop.conf.Configuration
import org.apache.spark.SparkEnv
import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.catalyst.{FunctionIdentifier, InternalRow}
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry.FunctionBuilder
import org.apache.spark.sql.catalyst.expressions.{ExpressionInfo, GenericInternalRow, InputFileBlockStart, InputFileName, LeafExpression, Nondeterministic}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, LongType, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * `sql_ext_arrival()`: a row's place in its source's order, the same for a batch scan and for
 * a micro-batch (spec/sql.md section 2), so a stream is replayed as the batch query replays it.
 *
 * For a file (a Delta table's data file, a file of a directory): struct(file_time, file,
 * block, row) = the file's modification time (ms), a fixed hash of its path (files written
 * in the same millisecond), the split's start offset, and the row's position in the split.
 * Delta admits a table's files in commit order and records the written file's modification
 * time; a file directory stream admits files by modification time. Spark packs a batch's
 * files into tasks largest first, so the scan order within a micro-batch is none of these.
 *
 * Other sources (a DataFrame, a rate stream): file_time = file = 0, block = the task's
 * partition index, row = the position in the task: the scan order.
 */
case class ArrivalSequence() extends LeafExpression with Nondeterministic with CodegenFallback {
  @transient private[this] var partition: Long = _
  @transient private[this] var path: UTF8String = _
  @transient private[this] var start: Long = _
  @transient private[this] var block: Long = _
  @transient private[this] var fileTime: Long = _
  @transient private[this] var fileHash: Long = _
  @transient private[this] var row: Long = _
  // Spark's own input_file_name() and input_file_block_start(): the split being scanned.
  @transient private[this] var currentFile: InputFileName = _
  @transient private[this] var currentStart: InputFileBlockStart = _

  override protected def initializeInternal(partitionIndex: Int): Unit = {
    partition = partitionIndex.toLong
    currentFile = InputFileName()
    currentFile.initialize(partitionIndex)
    currentStart = InputFileBlockStart()
    currentStart.initialize(partitionIndex)
    path = null
    row = 0L
  }

  override protected def evalInternal(input: InternalRow): Any = {
    val file = currentFile.eval(input).asInstanceOf[UTF8String]
    val offset = currentStart.eval(input).asInstanceOf[Long]
    // The holder hands out one path object per split: comparing references is enough, and
    // spares a comparison of the path's bytes per row.
    if (path == null || (file ne path) || offset != start) {
      path = file
      start = offset
      row = 0L
      if (file.numBytes() == 0) { fileTime = 0L; fileHash = 0L; block = partition }
      else {
        val url = file.toString
        fileTime = ArrivalSequence.modificationTime(url)
        fileHash = ArrivalSequence.pathHash(url)
        block = offset
      }
    }
    val value = new GenericInternalRow(Array[Any](fileTime, fileHash, block, row))
    row += 1
    value
  }

  override def nullable: Boolean = false
  override def dataType: DataType = ArrivalSequence.Type
  override def prettyName: String = ArrivalSequence.Name
}

object ArrivalSequence {
  val Name = "sql_ext_arrival"

  val Type: StructType = new StructType()
    .add("file_time", LongType, nullable = false)
    .add("file", LongType, nullable = false)
    .add("block", LongType, nullable = false)
    .add("row", LongType, nullable = false)

  val registration: (FunctionIdentifier, ExpressionInfo, FunctionBuilder) = (
    FunctionIdentifier(Name),
    new ExpressionInfo(classOf[ArrivalSequence].getName, Name),
    _ => ArrivalSequence())

  /** Files never change once written (Delta's, and a stream's files by contract): each task
   *  asks the file system once per file. Bounded, it is cleared when full. */
  private val times = new ConcurrentHashMap[String, java.lang.Long]()
  private val MaxCached = 100000
  /** A Hadoop configuration with the application's spark.hadoop.* settings, once per JVM. */
  private lazy val hadoopConf = {
    val conf = new Configuration()
    Option(SparkEnv.get).foreach(_.conf.getAll.collect {
      case (key, value) if key.startsWith("spark.hadoop.") =>
        conf.set(key.stripPrefix("spark.hadoop."), value)
    })
    conf
  }

  def modificationTime(url: String): Long = {
    val cached = times.get(url)
    if (cached != null) return cached
    val hadoopPath = SparkPath.fromUrlString(url).toPath
    val time = hadoopPath.getFileSystem(hadoopConf).getFileStatus(hadoopPath).getModificationTime
    if (times.size() > MaxCached) times.clear()
    times.put(url, time)
    time
  }

  /** A 64-bit FNV-1a hash of the path: stable across JVMs and runs, unlike String.hashCode's
   *  32 bits (which collide far sooner). */
  def pathHash(url: String): Long = {
    var hash = 0xcbf29ce484222325L
    url.getBytes("UTF-8").foreach { b => hash = (hash ^ (b & 0xff)) * 0x100000001b3L }
    hash
  }
}
