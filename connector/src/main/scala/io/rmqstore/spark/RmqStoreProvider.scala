package io.rmqstore.spark

import java.util

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import store.StoreException

/** The JVM engine of the rmqstore source: `spark.read.format(RmqStoreProvider.ShortName)`, or the class
  * name, which always selects this engine. Options and store paths are validated when the table is
  * created, so errors surface at load(); a schema given with `.schema(...)` is validated like the Python engine does.
  */
class RmqStoreProvider extends TableProvider with DataSourceRegister {
  override def shortName(): String = RmqStoreProvider.ShortName

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = {
    RmqOptions.parse(options)
    RmqSchema.Table
  }

  override def supportsExternalMetadata(): Boolean = true

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]
  ): Table = {
    val options = RmqOptions.parse(properties)
    val spark = SparkSession.active
    RmqStoreProvider.storeErrors(
      RmqStores.check(options, spark.sessionState.newHadoopConfWithOptions(RmqStores.hadoopSettings(options)))
    )
    new RmqStoreTable(RmqSchema.validate(schema), options)
  }
}

object RmqStoreProvider {

  /** The Python engine's name too: Spark resolves `format("rmqstore")` here whenever the jar is loaded (a
    * JVM source wins over a Python one; python/rmqstore/spark/engine.py), batch and streaming alike.
    */
  val ShortName = "rmqstore"

  /** `body` with a StoreException rethrown as an IllegalArgumentException: PySpark shows that by its message,
    * so the cause is the error's first line (as for option errors); another JVM exception arrives as a
    * Py4JJavaError led by "An error occurred".
    */
  def storeErrors[T](body: => T): T =
    try body
    catch { case e: StoreException => throw new IllegalArgumentException(e.getMessage, e) }
}
