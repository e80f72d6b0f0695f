package io.sqlext.auth

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}
import java.security.MessageDigest
import java.util.Base64
import javax.crypto.SecretKeyFactory
import javax.crypto.spec.PBEKeySpec
import javax.security.sasl.AuthenticationException

import scala.jdk.CollectionConverters._

import org.apache.hive.service.auth.PasswdAuthenticationProvider

/**
 * HiveServer2 CUSTOM authentication against a file of salted password hashes, one user a line:
 *
 * {{{
 *   <user>:pbkdf2_sha256:<iterations>:<salt, base64>:<hash, base64>
 * }}}
 *
 * written by `sql-ext passwd` (sql_ext/auth.py; lines starting with # are comments). The file
 * is read at every sign-in, so adding or removing a user needs no restart. HiveServer2 builds
 * this class with a fresh HiveConf, which carries only Hive's own settings: the file's path is
 * the JVM system property `sql_ext.auth.password_file`, set by the server's launcher.
 */
class PasswordFileAuthenticator extends PasswdAuthenticationProvider {

  override def Authenticate(user: String, password: String): Unit = {
    val file = Option(System.getProperty(PasswordFileAuthenticator.FileProperty)).getOrElse(
      throw new AuthenticationException("sql-ext password authentication has no password file"))
    val entry = PasswordFileAuthenticator.entries(file).get(user)
    if (entry.isEmpty || password == null || !entry.get.accepts(password)) {
      throw new AuthenticationException(s"wrong user name or password for user '$user'")
    }
  }
}

object PasswordFileAuthenticator {
  val FileProperty = "sql_ext.auth.password_file"

  /** One user's stored hash. */
  case class Entry(iterations: Int, salt: Array[Byte], hash: Array[Byte]) {
    def accepts(password: String): Boolean =
      MessageDigest.isEqual(pbkdf2(password, salt, iterations, hash.length), hash)
  }

  def entries(path: String): Map[String, Entry] =
    Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8).asScala.iterator
      .map(_.trim).filter(line => line.nonEmpty && !line.startsWith("#"))
      .flatMap(parse).toMap

  /** A line of the file; None for one that is not in the format (it admits nobody). */
  def parse(line: String): Option[(String, Entry)] = line.split(":") match {
    case Array(user, "pbkdf2_sha256", iterations, salt, hash) if iterations.forall(_.isDigit) =>
      val decoder = Base64.getDecoder
      scala.util.Try((user, Entry(iterations.toInt, decoder.decode(salt), decoder.decode(hash))))
        .toOption
    case _ => None
  }

  def pbkdf2(password: String, salt: Array[Byte], iterations: Int, bytes: Int): Array[Byte] = {
    val spec = new PBEKeySpec(password.toCharArray, salt, iterations, bytes * 8)
    SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded
  }
}
