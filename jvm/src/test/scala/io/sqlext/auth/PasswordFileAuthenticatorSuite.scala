package io.sqlext.auth

import java.nio.file.Files
import java.util.Base64
import javax.security.sasl.AuthenticationException

import org.scalatest.funsuite.AnyFunSuite

class PasswordFileAuthenticatorSuite extends AnyFunSuite {

  private def line(user: String, password: String, salt: Array[Byte]): String = {
    val hash = PasswordFileAuthenticator.pbkdf2(password, salt, 1000, 32)
    val b64 = Base64.getEncoder
    s"$user:pbkdf2_sha256:1000:${b64.encodeToString(salt)}:${b64.encodeToString(hash)}"
  }

  test("the right password signs in; a wrong one, an unknown user or a bad line does not") {
    val file = Files.createTempFile("passwords", ".txt")
    Files.writeString(file, Seq("# team", line("ann", "s3cret", Array[Byte](1, 2, 3)),
      "bob:plain:secret", "").mkString("\n"))
    System.setProperty(PasswordFileAuthenticator.FileProperty, file.toString)
    val auth = new PasswordFileAuthenticator
    auth.Authenticate("ann", "s3cret")
    for ((user, password) <- Seq(("ann", "wrong"), ("ann", ""), ("carl", "s3cret"),
        ("bob", "secret"), ("ann", null))) {
      intercept[AuthenticationException](auth.Authenticate(user, password))
    }
  }

  test("Python's hashlib.pbkdf2_hmac and the JVM agree (a known vector)") {
    // hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 1, 32).hex()
    val hex = PasswordFileAuthenticator.pbkdf2("password", "salt".getBytes, 1, 32)
      .map("%02x".format(_)).mkString
    assert(hex == "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b")
  }
}
