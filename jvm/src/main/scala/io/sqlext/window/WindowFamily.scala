package io.sqlext.window

/**
 * The window of a [[WindowSpec]] as typed values, parsed once from the rewriter's JSON
 * ([[WindowSpec.family]]): an unknown name fails there, with the field it came from, and every
 * rule downstream matches these sealed types exhaustively.
 */
sealed trait Family

object Family {
  final case class Tumbling(policy: Policy) extends Family
  final case class Sliding(eviction: Policy, trigger: Policy) extends Family
  final case class TimeInterval(watermark: Watermark) extends Family

  def parse(spec: WindowSpec): Family = spec.kind match {
    case "tumbling" => Tumbling(Policy.parse(spec.policy, spec.count, spec.delta, spec.seconds,
      "policy"))
    case "sliding" => Sliding(
      Policy.parse(spec.policy, spec.count, spec.delta, spec.seconds, "policy"),
      Policy.parse(spec.trigger, spec.triggerCount, spec.triggerDelta, spec.triggerSeconds,
        "trigger"))
    case "time_interval" => TimeInterval(Watermark.parse(spec.watermark, spec.watermarkDelay))
    case other => throw WindowSpec.unknown("kind", other)
  }
}

/** A TUMBLING flush or a SLIDING eviction or trigger policy. */
sealed trait Policy

object Policy {
  final case class Count(n: Long) extends Policy
  /** DELTA(attr, d): d in the attribute's units, seconds for a timestamp. */
  final case class Delta(d: Double) extends Policy
  final case class Time(seconds: Double) extends Policy
  /** PUNCT(): the end of each input file. */
  case object FilePunct extends Policy
  /** PUNCT(expr): a marker row. */
  case object MarkerPunct extends Policy

  def parse(name: String, count: Long, delta: Double, seconds: Double, field: String): Policy =
    name match {
      case "count" => Count(count)
      case "delta" => Delta(delta)
      case "time" => Time(seconds)
      case "punct" => FilePunct
      case "punct_expr" => MarkerPunct
      case other => throw WindowSpec.unknown(field, other)
    }
}

/** How a TIME_INTERVAL window learns its watermark. */
sealed trait Watermark

object Watermark {
  /** None: all input is present (batch), every pane fires once, on time. */
  case object AllInput extends Watermark
  /** WATERMARK BY expr: marker rows carry it. */
  case object ByMarkers extends Watermark
  /** WATERMARK DELAY d: the highest event time so far, less d seconds. */
  final case class Delay(seconds: Double) extends Watermark

  def parse(name: String, delay: Double): Watermark = name match {
    case "" => AllInput
    case "by" => ByMarkers
    case "delay" => Delay(delay)
    case other => throw WindowSpec.unknown("watermark", other)
  }
}
