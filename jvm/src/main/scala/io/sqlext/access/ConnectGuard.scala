package io.sqlext.access

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}
import java.security.MessageDigest

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.spark.connect.proto.{AddArtifactsRequest, ConfigRequest, ConfigResponse,
  KeyValue}
import org.apache.spark.sql.internal.SQLConf
import org.sparkproject.connect.protobuf.Descriptors.FieldDescriptor
import org.sparkproject.connect.protobuf.Message
import org.sparkproject.connect.grpc.{ForwardingServerCall, ForwardingServerCallListener,
  Metadata, ServerCall, ServerCallHandler, ServerInterceptor, Status}

/**
 * Who a Spark Connect client is, and what it may send. Registered as Spark Connect's gRPC
 * interceptor (spark.connect.grpc.interceptor.classes) in place of Spark's single pre-shared
 * token, with the server's token file (`sql-ext connect-token FILE USER`: lines of
 * `user:sha256:<hex of the token's SHA-256>`, read again when it changes):
 *
 *  - a call's bearer token names its user; an unknown or missing token is UNAUTHENTICATED;
 *  - every request's `user_context.user_id` becomes that user, whatever the client claimed
 *    (pyspark sends the operating system's user by default): Spark keys a client's session by
 *    it, and `SessionUsers` reads the user of a Connect session from that key, so the user
 *    comes from the credential alone;
 *  - for a user who is not an admin, the rules of `AccessChecks` hold for every plan (they run
 *    as Spark analyses it), and here, judged by the types and fields of a request's messages,
 *    for what never reaches analysis: a ConfigRequest may set only the allow-list of settings
 *    (rule 'settings'), no client code (Python or Scala UDFs, UDTFs, data sources, foreach
 *    writers, Java functions by class, artifacts: rule 'code'), no external command (rule
 *    'jvm'), no declarative pipeline (its runs write tables through the catalog) and with
 *    access rules no catalog listing calls (rule 'tables': SHOW TABLES and DESCRIBE keep to the
 *    rules); a model's files only where the rule 'paths' lets the user;
 *  - with `--no-client-udfs`, client code is refused to admins too;
 *  - no client reads a secret setting (a password, a key: Spark's spark.redaction.regex) from
 *    a ConfigResponse, as no SET shows one: the operator's settings may hold credentials.
 */
class ConnectGuard extends ServerInterceptor {
  override def interceptCall[Req, Resp](call: ServerCall[Req, Resp], headers: Metadata,
      next: ServerCallHandler[Req, Resp]): ServerCall.Listener[Req] = {
    val bearer = Option(headers.get(ConnectGuard.Authorization)).map(_.stripPrefix("Bearer "))
    ConnectGuard.userOf(bearer) match {
      case None =>
        call.close(Status.UNAUTHENTICATED.withDescription("sql-ext connect-server: the " +
          "connection's token is not one of the server's (sc://host:port/;token=...)"),
          new Metadata())
        new ServerCall.Listener[Req] {}
      case Some(user) =>
        val redacting = new ForwardingServerCall.SimpleForwardingServerCall[Req, Resp](call) {
          override def sendMessage(message: Resp): Unit = super.sendMessage(message match {
            case config: ConfigResponse => ConnectGuard.redacted(config).asInstanceOf[Resp]
            case other => other
          })
        }
        new ForwardingServerCallListener.SimpleForwardingServerCallListener[Req](
            next.startCall(redacting, headers)) {
          @volatile private var refused = false
          override def onMessage(message: Req): Unit = if (!refused) {
            ConnectGuard.refusal(user, message) match {
              case Some(why) =>
                refused = true
                call.close(Status.PERMISSION_DENIED.withDescription(why), new Metadata())
              case None =>
                super.onMessage(if (ConnectGuard.identifies) ConnectGuard.as(user, message)
                  else message)
            }
          }
          override def onHalfClose(): Unit = if (!refused) super.onHalfClose()
        }
    }
  }
}

object ConnectGuard {
  private val Authorization =
    Metadata.Key.of("Authorization", Metadata.ASCII_STRING_MARSHALLER)

  private final case class Setup(tokens: Option[WatchedFile[Map[String, String]]],
      noClientCode: Boolean)
  @volatile private var setup: Option[Setup] = None

  /** Set by the server's launcher before the service starts: the token file (null: clients
   *  are not told apart, Spark's single token or none checks them), and whether client code is
   *  refused to every user. An invalid file is an error naming its line. */
  def configure(tokens: String, noClientCode: Boolean): Unit =
    setup = Some(Setup(Option(tokens).map(t => WatchedFile(Paths.get(t).toAbsolutePath, read)),
      noClientCode))

  /** Whether clients are told apart by their tokens. */
  def identifies: Boolean = setup.exists(_.tokens.isDefined)

  /** The user whose token `bearer` is, read from the token file (again if it changed; an
   *  invalid change keeps no token valid until it is fixed); "" for every client of a server
   *  that does not tell them apart; None for no user. */
  private def userOf(bearer: Option[String]): Option[String] = setup.flatMap { s =>
    s.tokens match {
      case None => Some("")
      case Some(file) =>
        bearer.flatMap(token => file.current.getOrElse(Map.empty).get(sha256(token)))
    }
  }

  /** The file's users by their tokens' hashes, or what is wrong with it. */
  private[access] def read(path: Path): Either[String, Map[String, String]] =
    try {
      val entries = Files.readAllLines(path).asScala.zipWithIndex
        .filterNot { case (line, _) => line.trim.isEmpty || line.trim.startsWith("#") }
        .map { case (line, i) =>
          line.trim.split(":") match {
            case Array(user, "sha256", hash) if user.nonEmpty && hash.matches("[0-9a-f]{64}") =>
              hash -> user
            case _ => return Left(s"$path line ${i + 1}: not user:sha256:<64 hex digits> " +
              "(sql-ext connect-token FILE USER writes one)")
          }
        }
      Right(entries.toMap)
    } catch { case NonFatal(e) => Left(s"$path: ${e.getMessage}") }

  def sha256(token: String): String =
    MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8))
      .map("%02x".format(_)).mkString

  /** `response` with the values of secret settings redacted as Spark's SET redacts them
   *  (SQLConf.redactOptions: spark.redaction.regex and spark.sql.redaction.options.regex). */
  private[access] def redacted(response: ConfigResponse): ConfigResponse = {
    val pairs = response.getPairsList.asScala.toSeq
    val values = SQLConf.get.redactOptions(pairs.filter(_.hasValue).map(p => p.getKey ->
      p.getValue)).toMap
    val shown = pairs.map(p => if (!p.hasValue || values(p.getKey) == p.getValue) p
      else KeyValue.newBuilder(p).setValue(values(p.getKey)).build())
    if (shown == pairs) response
    else response.toBuilder.clearPairs().addAllPairs(shown.asJava).build()
  }

  /** The messages of Connect's protocol that carry client code: functions, table functions,
   *  data sources and foreach writers in Python or the JVM, a Java function by class name. */
  private val ClientCode = Set("PythonUDF", "ScalarScalaUDF", "JavaUDF", "PythonUDTF",
    "PythonDataSource", "StreamingForeachFunction", "TypedAggregateExpression")
      .map("spark.connect." + _)

  /** The catalog API's calls that list or describe tables outside the access rules' listings
   *  (SHOW TABLES, DESCRIBE do keep to them). */
  private val CatalogListings = Set("list_tables", "list_columns", "get_table", "table_exists",
    "list_views", "list_partitions", "get_table_properties", "get_create_table_string")

  /** `message` and every message nested in its fields (a plan's relations, expressions,
   *  commands), by Connect's protobuf descriptors. */
  private def nested(message: Message): Iterator[Message] =
    Iterator(message) ++ message.getAllFields.asScala.iterator.flatMap {
      case (field, value) if field.getJavaType == FieldDescriptor.JavaType.MESSAGE =>
        value match {
          case list: java.util.List[_] => list.asScala.iterator
            .collect { case m: Message => m }.flatMap(nested)
          case m: Message => nested(m)
          case _ => Iterator.empty
        }
      case _ => Iterator.empty
    }

  /** The repeated string field `name` of `message`. */
  private def strings(message: Message, name: String): Seq[String] =
    Option(message.getDescriptorForType.findFieldByName(name)).toSeq.flatMap { field =>
      message.getField(field) match {
        case list: java.util.List[_] => list.asScala.map(_.toString)
        case _ => Nil
      }
    }

  /** The map field `name` of `message` (protobuf keeps it as entries of `key` and `value`). */
  private def map(message: Message, name: String): Map[String, String] =
    Option(message.getDescriptorForType.findFieldByName(name)).toSeq.flatMap { field =>
      message.getField(field) match {
        case list: java.util.List[_] => list.asScala.collect { case entry: Message =>
          text(entry, "key").getOrElse("") -> text(entry, "value").getOrElse("") }
        case _ => Nil
      }
    }.toMap

  /** The string field `name` of `message`, where it is set. */
  private def text(message: Message, name: String): Option[String] =
    Option(message.getDescriptorForType.findFieldByName(name))
      .filter(message.hasField).map(message.getField(_).toString)

  /** `message` (a request of Connect's protocol) with `user` as its user_context's user_id; a
   *  message without a user context as it is. */
  private def as[M](user: String, message: M): M = {
    def call(target: AnyRef, name: String, args: AnyRef*): AnyRef = target.getClass.getMethods
      .find(m => m.getName == name && m.getParameterCount == args.length &&
        m.getParameterTypes.zip(args).forall { case (t, a) => t.isInstance(a) })
      .getOrElse(throw new NoSuchMethodException(s"${target.getClass.getName}.$name"))
      .invoke(target, args: _*)
    val request = message.asInstanceOf[AnyRef]
    if (!request.getClass.getMethods.exists(_.getName == "getUserContext")) message
    else {
      val context = call(call(call(request, "getUserContext"), "toBuilder"), "setUserId", user)
      val builder = call(request, "toBuilder")
      call(builder, "setUserContext", call(context, "build"))
      call(builder, "build").asInstanceOf[M]
    }
  }

  /** Why `user` may not send `message`, if not: judged by its messages' types and fields. */
  private[access] def refusal(user: String, message: Any): Option[String] = {
    val noCode = setup.exists(_.noClientCode)
    val checked = AccessPolicy.checks(user)
    def code(what: String) = Some(
      if (noCode && !checked) s"this server runs no client code " +
        s"(sql-ext connect-server --no-client-udfs): $what"
      else AccessChecks.message(user, "code", what))
    message match {
      case _: AddArtifactsRequest if noCode || checked =>
        code("artifacts (jars, Python files, classes) load code into the server")
      case config: ConfigRequest if checked && config.getOperation.hasSet =>
        config.getOperation.getSet.getPairsList.asScala.map(_.getKey)
          .find(!AllowedSettings(_)).map { key =>
            AccessChecks.message(user, "settings", s"setting $key: a session may set only " +
              AllowedSettings.names.mkString(", "))
          }
      case request: Message if noCode || checked =>
        nested(request).map(judge(user, checked, noCode, _)).collectFirst { case Some(why) => why }
          .map { case (rule, why) =>
            if (rule == "code") code(why).get else AccessChecks.message(user, rule, why)
          }
      case _ => None
    }
  }

  /** Why one message of a request is refused: (rule, why). */
  private def judge(user: String, checked: Boolean, noCode: Boolean,
      message: Message): Option[(String, String)] = {
    val kind = message.getDescriptorForType.getFullName
    lazy val set = message.getAllFields.asScala.keys.map(_.getName).toSet
    kind match {
      case _ if ClientCode(kind) =>
        Some("code" ->
          "a function or data source defined by the client runs its code in the server")
      case _ if !checked => None
      case "spark.connect.ExecuteExternalCommand" =>
        Some("jvm" -> "an external command runs through a connector of the client's choosing")
      case "spark.connect.PipelineCommand" =>
        Some("tables" -> ("a declarative pipeline's run creates and writes its tables and " +
          "checkpoints through the catalog, not by statements the access checks judge: " +
          "pipelines run with an admin's token"))
      case "spark.connect.Catalog" if AccessRules.configured && set.exists(CatalogListings) =>
        Some("tables" -> ("the catalog API's listings do not keep to the access rules: SHOW " +
          "TABLES, SHOW DATABASES and DESCRIBE TABLE do"))
      case "spark.connect.Read.DataSource" =>
        // Judged before Spark plans the read, which reads the files' schema: an error of a
        // file read as another format could show some of its bytes. The plan is judged too.
        val options = map(message, "options")
        val paths = strings(message, "paths") ++ RelationUses.paths(options)
        val uses = RelationUses.sourceUses(text(message, "format").getOrElse(""), options, paths)
        if (uses.isEmpty) None
        else AccessChecks.refusal(org.apache.spark.sql.SparkSession.getDefaultSession.get, user,
          uses)
      case "spark.connect.MlCommand.Write" | "spark.connect.MlCommand.Read" =>
        val access = if (kind.endsWith("Write")) FileAccess.Write else FileAccess.Read
        text(message, "path").flatMap { path =>
          val session = org.apache.spark.sql.SparkSession.getDefaultSession.get
          AccessChecks.refusal(session, user, Seq(Use.OnFiles(path, access,
            "a machine learning model's files")))
        }
      case _ => None
    }
  }
}
