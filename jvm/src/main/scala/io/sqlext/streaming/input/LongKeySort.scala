package io.sqlext.streaming.input

/**
 * A stable sort of rows by long keys (lexicographically: `keys(0)`, then `keys(1)`, ...), as
 * a permutation of row numbers, without boxing: a natural merge sort, so input that is already
 * in order costs one pass, and input made of r ordered runs (a micro-batch's packs, one per map
 * task and key, each in its splits' order) costs n log r comparisons of longs.
 */
object LongKeySort {

  def order(keys: Array[Array[Long]], n: Int): Array[Int] = {
    var from = Array.range(0, n)
    var starts = runStarts(keys, from, n)
    if (starts.length <= 2) return from // one run: in order already
    var into = new Array[Int](n)
    while (starts.length > 2) {
      val merged = Array.newBuilder[Int]
      var r = 0
      while (r + 1 < starts.length) {
        val (lo, mid) = (starts(r), starts(r + 1))
        val hi = if (r + 2 < starts.length) starts(r + 2) else n
        merged += lo
        if (mid >= hi) System.arraycopy(from, lo, into, lo, hi - lo)
        else merge(keys, from, into, lo, mid, hi)
        r += 2
      }
      merged += n
      starts = merged.result()
      val swap = from; from = into; into = swap
    }
    from
  }

  /** Where each ordered run of `rows` starts, then n. */
  private def runStarts(keys: Array[Array[Long]], rows: Array[Int], n: Int): Array[Int] = {
    val starts = Array.newBuilder[Int]
    starts += 0
    var i = 1
    while (i < n) {
      if (compare(keys, rows(i - 1), rows(i)) > 0) starts += i
      i += 1
    }
    starts += n
    starts.result()
  }

  private def merge(keys: Array[Array[Long]], from: Array[Int], into: Array[Int], lo: Int,
      mid: Int, hi: Int): Unit = {
    var (a, b, out) = (lo, mid, lo)
    while (a < mid && b < hi) {
      // Ties take the left run first: stable.
      if (compare(keys, from(b), from(a)) < 0) { into(out) = from(b); b += 1 }
      else { into(out) = from(a); a += 1 }
      out += 1
    }
    if (a < mid) System.arraycopy(from, a, into, out, mid - a)
    if (b < hi) System.arraycopy(from, b, into, out, hi - b)
  }

  private def compare(keys: Array[Array[Long]], x: Int, y: Int): Int = {
    var k = 0
    while (k < keys.length) {
      val c = java.lang.Long.compare(keys(k)(x), keys(k)(y))
      if (c != 0) return c
      k += 1
    }
    0
  }
}
