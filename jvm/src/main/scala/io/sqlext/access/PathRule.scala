package io.sqlext.access

import org.apache.hadoop.conf.Configuration

/**
 * The rule `paths`: where a user who is not an admin may name files.
 *
 *  1. Never in a folder of the catalog (`TableFolders`: the warehouse, a database's folder, a
 *     table's, a streaming table's checkpoint), nor in a folder that holds one: a table's files
 *     are reached through the table, by name, where the `tables` rules apply. A statement that
 *     creates or replaces a table may name that table's own folders again.
 *  2. Elsewhere, where the first `locations` rule for the user whose folder holds the path
 *     gives the access asked (READ FILES, WRITE FILES, CREATE EXTERNAL TABLE). The server's
 *     `--allow-path` folders are such rules for every user, with every access, after the rules
 *     file's own. No rule: refused.
 */
private[access] object PathRule {
  /** Why `user` may not make `use`, if not. `owned`: the catalog's folders (read once for a
   *  statement, only when it names a path). */
  def refusal(user: String, use: Use.OnFiles, conf: Configuration,
      owned: => Seq[TableFolders.Owned]): Option[String] = {
    val named = s"${use.what} at '${use.location}'"
    Folder.of(use.location, conf) match {
      case None => Some(s"$named names no folder the server can judge (a pattern in its scheme " +
        "or server)")
      case Some(folder) =>
        TableFolders.conflict(folder, owned, use.defines).map { why =>
          s"$named is $why: a table's files are reached through the table, by its name, where " +
            "the access rules apply"
        }.orElse(locationRefusal(user, folder, use, named, conf))
    }
  }

  private def locationRefusal(user: String, folder: Folder, use: Use.OnFiles, named: String,
      conf: Configuration): Option[String] =
    AccessRules.locations(user) match {
      case Left(problem) => Some(problem)
      case Right(rules) =>
        val rulesFirst = rules.map(r => (r.path, r.privileges)) ++
          AccessPolicy.allowedPaths.map(_ -> FileAccess.all.toSet)
        val holding = rulesFirst.find { case (path, _) =>
          Folder.of(path, conf).exists(_.contains(folder))
        }
        holding match {
          case Some((_, privileges)) if privileges(use.access) => None
          case Some((path, privileges)) => Some(s"$named: ${use.access} is not among the " +
            s"privileges that the first locations rule for '$path' gives $user " +
            s"(${privileges.map(_.name).toSeq.sorted.mkString(", ")})")
          case None => Some(s"$named: no locations rule gives $user ${use.access} there" +
            (if (AccessPolicy.allowedPaths.isEmpty) ""
             else s" (the server's --allow-path folders: " +
               s"${AccessPolicy.allowedPaths.mkString(", ")})"))
        }
    }
}

/**
 * The rule `network`: the servers a user who is not an admin may make the server connect to,
 * naming them in a Kafka table's or read's options: where the first `servers` rule for the user
 * that matches `host:port` gives CONNECT, or `--allow-server` lists it. Connection options
 * that load classes or reach other servers (`KafkaOptions`) are refused.
 */
private[access] object NetworkRule {
  def refusal(user: String, use: Use): Option[String] = use match {
    case Use.Connects(servers, what) =>
      AccessRules.servers(user) match {
        case Left(problem) => Some(problem)
        case Right(rules) => servers.find(server => !rules.exists(_.address.matcher(server)
            .matches()) && !AccessPolicy.allowedServers.exists(_.equalsIgnoreCase(server)))
          .map(server => s"$what connects to $server: no servers rule gives $user CONNECT " +
            "there (the server connects where its options say, in the server's network)")
      }
    case Use.ConnectionOption(key, what) =>
      Some(s"$what sets the option $key, which loads code into the server or reaches another " +
        "server (a user may set only the connection's security and tuning options)")
    case _ => None
  }
}
