package io.sqlext.aggregate

import org.scalatest.funsuite.AnyFunSuite

/** The decision batch and streaming share, as the Python rewriter asks it. */
class PartialAggregatesSuite extends AnyFunSuite {
  private def kinds(facts: String*): String =
    PartialAggregates.kindsJson(facts.mkString("[", ",", "]"))
  private def fact(function: String, dataType: String, distinct: Boolean = false,
      filtered: Boolean = false) = s"""{"function":"$function","type":"$dataType",""" +
    s""""distinct":$distinct,"filtered":$filtered}"""

  test("numbers and COUNT of anything have partials; the kinds come back in order") {
    assert(kinds(fact("sum", "bigint"), fact("avg", "double"), fact("min", "tinyint"),
      fact("max", "float"), fact("count", "string"), fact("count", "*")) ==
      """["sum","avg","min","max","count","count"]""")
  }

  test("decimals, strings, DISTINCT and FILTER have none, and one spoils all") {
    assert(kinds(fact("sum", "decimal(10,2)")) == null)
    assert(kinds(fact("max", "string")) == null)
    assert(kinds(fact("sum", "int", distinct = true)) == null)
    assert(kinds(fact("count", "int", filtered = true)) == null)
    assert(kinds(fact("sum", "int"), fact("collect_list", "int")) == null)
  }
}
