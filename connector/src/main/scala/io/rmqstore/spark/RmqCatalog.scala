package io.rmqstore.spark

import java.util
import java.util.Locale

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.analysis.{NoSuchNamespaceException, NoSuchTableException}
import org.apache.spark.sql.connector.catalog.{
  Identifier,
  NamespaceChange,
  SupportsNamespaces,
  Table,
  TableCatalog,
  TableChange
}
import org.apache.spark.sql.connector.expressions.{Expressions, Transform}
import org.apache.spark.sql.connector.expressions.filter.{Predicate => V2Predicate}
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String

/** Topics as tables (README "Catalog"): `spark.sql.catalog.<catalog> = io.rmqstore.spark.RmqCatalog`,
  * one namespace per store named by `store.<name> = <path>`; `store.<name>.<option>` sets a read option for
  * that store, any other option for every store. A namespace's tables are the store's topics (`Store.topics`:
  * consume queues and topics.json, the log is not read; retry, DLQ and system topics included, as
  * `mqadmin topicList` lists them) and `_all`, every topic. A topic's table is the store's `RmqStoreTable`
  * with `topic = <name>` pinned as a pushed filter, so it plans and reads like the source filtered on the
  * topic. Read-only.
  */
class RmqCatalog extends TableCatalog with SupportsNamespaces {
  import RmqCatalog._

  private var catalogName: String = ""

  /** Store name -> the read options of its tables (validated when the catalog is first used). */
  private var stores: Map[String, RmqOptions] = Map.empty

  override def initialize(name: String, options: CaseInsensitiveStringMap): Unit = {
    catalogName = name
    val configured = options.asCaseSensitiveMap().asScala.toMap
    def isStore(key: String) = key.toLowerCase(Locale.ROOT).startsWith(StorePrefix)
    val shared = configured.filter { case (k, _) => !isStore(k) }
    val perStore = configured.collect {
      case (k, v) if isStore(k) =>
        val rest = k.substring(StorePrefix.length)
        val dot = rest.indexOf('.')
        if (dot < 0) (rest, None, v) else (rest.substring(0, dot), Some(rest.substring(dot + 1)), v)
    }
    (shared.keys ++ perStore.flatMap(_._2)).find(k => PathOptions(k.toLowerCase(Locale.ROOT))).foreach { k =>
      throw new IllegalArgumentException(
        s"rmqstore catalog '$name': option '$k' is not a catalog option: a store's path is " +
          s"spark.sql.catalog.$name.$StorePrefix<name> = <path>"
      )
    }
    val paths = perStore.collect { case (store, None, path) => store -> path }.toMap
    perStore.collect { case (store, Some(option), _) if !paths.contains(store) => (store, option) }.headOption
      .foreach { case (store, option) =>
        throw new IllegalArgumentException(
          s"rmqstore catalog '$name': option '$StorePrefix$store.$option' names store '$store', which has no " +
            s"path: set spark.sql.catalog.$name.$StorePrefix$store = <path>"
        )
      }
    stores = paths.map { case (store, path) =>
      val own = perStore.collect { case (`store`, Some(option), v) => option -> v }
      store -> RmqOptions.parse((shared ++ own + (RmqOptions.Path -> path)).asJava)
    }
  }

  override def name(): String = catalogName

  override def listNamespaces(): Array[Array[String]] = stores.keys.toArray.sorted.map(Array(_))

  override def listNamespaces(namespace: Array[String]): Array[Array[String]] = {
    storeOptions(namespace).getOrElse(throw new NoSuchNamespaceException(namespace))
    Array.empty
  }

  override def loadNamespaceMetadata(namespace: Array[String]): util.Map[String, String] = {
    val options = storeOptions(namespace).getOrElse(throw new NoSuchNamespaceException(namespace))
    util.Map.of(SupportsNamespaces.PROP_LOCATION, options.paths.head)
  }

  override def listTables(namespace: Array[String]): Array[Identifier] = {
    val options = storeOptions(namespace).getOrElse(throw new NoSuchNamespaceException(namespace))
    (AllTopics +: topics(options)).map(Identifier.of(namespace, _)).toArray
  }

  override def loadTable(ident: Identifier): Table = {
    val options = storeOptions(ident.namespace).getOrElse(throw new NoSuchTableException(ident))
    val known = topics(options) // opens the store: a missing store fails here, as the source's load() does
    if (ident.name == AllTopics) new RmqStoreTable(RmqSchema.Table, options)
    else if (known.contains(ident.name)) new RmqStoreTable(RmqSchema.Table, options, Array(topicIs(ident.name)))
    else throw new NoSuchTableException(ident)
  }

  /** The schema form: Spark 3.5 has it abstract; Spark 4's column form calls it. */
  override def createTable(
      ident: Identifier,
      schema: StructType,
      partitions: Array[Transform],
      properties: util.Map[String, String]
  ): Table = throw tableUnsupported(ident, "CREATE TABLE")

  override def alterTable(ident: Identifier, changes: TableChange*): Table =
    throw tableUnsupported(ident, "ALTER TABLE")

  override def dropTable(ident: Identifier): Boolean = throw tableUnsupported(ident, "DROP TABLE")

  override def renameTable(oldIdent: Identifier, newIdent: Identifier): Unit =
    throw tableUnsupported(oldIdent, "RENAME TABLE")

  override def createNamespace(namespace: Array[String], metadata: util.Map[String, String]): Unit =
    throw catalogUnsupported("CREATE NAMESPACE")

  override def alterNamespace(namespace: Array[String], changes: NamespaceChange*): Unit =
    throw catalogUnsupported("ALTER NAMESPACE")

  override def dropNamespace(namespace: Array[String], cascade: Boolean): Boolean =
    throw catalogUnsupported("DROP NAMESPACE")

  private def storeOptions(namespace: Array[String]): Option[RmqOptions] =
    if (namespace.length == 1) stores.get(namespace.head) else None

  private def topics(options: RmqOptions): Seq[String] = RmqStoreProvider.storeErrors {
    RmqStores.topics(
      options,
      SparkSession.active.sessionState.newHadoopConfWithOptions(RmqStores.hadoopSettings(options))
    )
  }

  private def tableUnsupported(ident: Identifier, operation: String): AnalysisException =
    new AnalysisException(
      "UNSUPPORTED_FEATURE.TABLE_OPERATION",
      Map("tableName" -> quoted((catalogName +: ident.namespace :+ ident.name).toSeq), "operation" -> operation)
    )

  private def catalogUnsupported(operation: String): AnalysisException =
    new AnalysisException(
      "UNSUPPORTED_FEATURE.CATALOG_OPERATION",
      Map("catalogName" -> quoted(Seq(catalogName)), "operation" -> operation)
    )
}

object RmqCatalog {

  /** Catalog options naming a store: `store.<name> = <path>`, `store.<name>.<option> = <value>`. */
  val StorePrefix = "store."

  /** The table of every topic of a store (a topic of that name is only reachable through `_all`). */
  val AllTopics = "_all"

  private val PathOptions = Set(RmqOptions.Path, RmqOptions.Paths).map(_.toLowerCase(Locale.ROOT))

  /** `topic = <name>` as Spark pushes it (string literals are UTF8String). */
  def topicIs(topic: String): V2Predicate =
    new V2Predicate("=", Array(Expressions.column("topic"), Expressions.literal(UTF8String.fromString(topic))))

  private def quoted(parts: Seq[String]): String = parts.map(p => s"`${p.replace("`", "``")}`").mkString(".")
}
