package io.sqlext.access

import java.nio.file.{Files, Path}
import java.nio.file.attribute.FileTime

import org.scalatest.funsuite.AnyFunSuite

/** The access rules file as a user and an admin meet it: the first matching rule decides, no
 *  match refuses, privileges imply what they say, a database as a whole, patterns matched
 *  whole, a file read again when it changes, and an invalid file named with its problem. */
class AccessRulesSuite extends AnyFunSuite {

  private val Example =
    """{"admins": ["ops"],
      | "groups": {"analysts": ["bob", "cy"]},
      | "tables": [
      |   {"user": "ann", "database": "sales", "table": "orders", "privileges": ["SELECT", "INSERT"]},
      |   {"group": "analysts", "database": "sales", "privileges": ["SELECT"]},
      |   {"user": "ann", "database": "live", "privileges": ["STREAM"]},
      |   {"user": "an+", "database": "scratch|tmp_.*", "privileges": ["OWNERSHIP"]},
      |   {"user": "bob", "database": "sales", "privileges": ["OWNERSHIP"]}]}""".stripMargin

  private def file(text: String): Path = {
    val path = Files.createTempFile("rules", ".json")
    Files.writeString(path, text)
    path
  }

  private def refusal(user: String, privilege: String, db: String,
      table: Option[String]): Option[String] =
    AccessRules.refusal(user, Privilege.of(privilege), db, table)

  private def allows(user: String, privilege: String, db: String, table: String): Boolean =
    refusal(user, privilege, db, Option(table)).isEmpty

  test("the first rule that matches decides; no match refuses") {
    AccessRules.use(file(Example).toString)
    assert(AccessRules.admins == Set("ops"))
    assert(allows("ann", "SELECT", "sales", "orders") && allows("ann", "INSERT", "sales", "ORDERS"))
    assert(!allows("ann", "DELETE", "sales", "orders"))
    assert(refusal("ann", "DELETE", "sales", Some("orders")).get
      .contains("DELETE on sales.orders is not among the privileges the first matching rule " +
        "gives (INSERT, SELECT)"))
    assert(!allows("ann", "SELECT", "sales", "customers"))  // the group's rule is not hers
    assert(refusal("ann", "SELECT", "sales", Some("customers")).get
      .contains("SELECT on sales.customers: no rule of the access rules file gives ann any " +
        "access to it"))
    // bob's own OWNERSHIP rule comes after his group's: the group's rule decides.
    assert(allows("bob", "SELECT", "sales", "customers") && !allows("bob", "DROP", "sales", "x"))
    assert(allows("cy", "SELECT", "sales", "orders") && !allows("cy", "SELECT", "live", "x"))
    // Patterns match whole names: "an+" is ann and annn, not anna; tmp_.* any tmp_ database.
    assert(allows("ann", "DROP", "scratch", "t") && allows("ann", "CREATE", "tmp_1", "t"))
    assert(!allows("anna", "SELECT", "scratch", "t") && !allows("ann", "SELECT", "scratch2", "t"))
  }

  test("STREAM holds a stream's writes to its own table, not reading it; OWNERSHIP holds all") {
    AccessRules.use(file(Example).toString)
    for (p <- Seq("STREAM", "CREATE", "INSERT", "UPDATE", "DELETE", "DROP", "ALTER")) {
      assert(allows("ann", p, "live", "counts"), p)
    }
    assert(!allows("ann", "SELECT", "live", "counts"))
    for (p <- Privilege.all.map(_.name)) assert(allows("ann", p, "scratch", "t"), p)
  }

  test("a database as a whole is matched by rules for all of its tables") {
    AccessRules.use(file(Example).toString)
    assert(refusal("ann", "CREATE", "scratch", None).isEmpty)
    assert(refusal("ann", "DROP", "live", None).isEmpty)
    // ann's sales rule names one table: it says nothing of the database as a whole.
    assert(refusal("ann", "CREATE", "sales", None).isDefined)
  }

  test("the file is read again when it changes; an invalid change refuses until it is fixed") {
    val path = file(Example)
    AccessRules.use(path.toString)
    assert(!allows("cy", "SELECT", "secret", "pay"))
    def rewrite(text: String): Unit = {
      val before = Files.getLastModifiedTime(path).toMillis
      Files.writeString(path, text)
      Files.setLastModifiedTime(path, FileTime.fromMillis(before + 2000))
    }
    rewrite("""{"tables": [{"user": "cy", "database": "secret", "privileges": ["SELECT"]}]}""")
    assert(allows("cy", "SELECT", "secret", "pay") && AccessRules.admins.isEmpty)
    rewrite("""{"tables": [{"user": "cy", "privileges": ["READ"]}]}""")
    val refused = refusal("cy", "SELECT", "secret", Some("pay")).get
    assert(refused.contains("invalid since it changed") && refused.contains("unknown privilege " +
      "READ"), refused)
    assert(AccessRules.admins.isEmpty)  // the last valid version's
    rewrite(Example)
    assert(!allows("cy", "SELECT", "secret", "pay") && AccessRules.admins == Set("ops"))
  }

  test("an invalid file is an error that names the problem and where it is") {
    def problem(text: String): String =
      intercept[IllegalArgumentException](AccessRules.use(file(text).toString)).getMessage
    assert(problem("""{"tables": [{"user": "a", "privileges": ["SELECT"], "tabel": "x"}]}""")
      .contains("tables[0] has an unknown key 'tabel' (known: columns, database, filter, " +
        "group, privileges, table, user)"))
    assert(problem("""{"tables": [{"user": "a", "privileges": ["SELECT"]}, {"user": "(",""" +
      """ "privileges": []}]}""").contains("tables[1].user is not a regular expression"))
    assert(problem("""{"tables": [{"user": "a"}]}""").contains("tables[0] has no privileges"))
    assert(problem("""{"admins": "ops"}""").contains("admins must be a list of strings"))
    assert(problem("""{"tables": [""").contains("JsonEOFException"))
    assert(problem("""[1]""").contains("the rules must be a JSON object"))
  }
}
