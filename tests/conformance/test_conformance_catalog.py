"""The JVM engine's catalog (README "Catalog": `io.rmqstore.spark.RmqCatalog`, JVM only) from PySpark SQL
over a fixture written by RocketMQ: the store's topics as tables, a topic table reading what the source
filtered on the topic reads, with both filters pushed (connector CatalogSuite checks the rest).
"""

from __future__ import annotations

import pytest
from chispa import assert_df_equality
from oracle import ORACLES, store_dir
from pyspark.sql import SparkSession

from helpers.spark_stores import explain_text
from rmqstore.spark.jar import PROVIDER_CLASS

pytestmark = pytest.mark.spark

FIXTURE = "rmq-5.5.0"


def test_sql_over_a_store_s_topic_tables(spark: SparkSession) -> None:
    # a catalog is loaded on first use, so setting it now configures it for the shared session
    spark.conf.set("spark.sql.catalog.rmqsql", "io.rmqstore.spark.RmqCatalog")
    spark.conf.set("spark.sql.catalog.rmqsql.store.broker_a", str(store_dir(FIXTURE)))
    topics = sorted({queue["topic"] for queue in ORACLES[FIXTURE]["queues"]})
    tables = spark.sql("SHOW TABLES IN rmqsql.broker_a").collect()
    assert [row.tableName for row in tables] == ["_all", *topics]

    direct = spark.read.format(PROVIDER_CLASS).load(str(store_dir(FIXTURE)))
    described = spark.sql("DESCRIBE rmqsql.broker_a.TopicTest").collect()
    columns = [(row.col_name, row.data_type) for row in described[:len(direct.schema)]]
    assert columns == [(field.name, field.dataType.simpleString()) for field in direct.schema]

    query = spark.sql("SELECT topic, queueOffset, msgId, key FROM rmqsql.broker_a.TopicTest WHERE key = 'Aa'")
    expected = (direct.where("topic = 'TopicTest' AND key = 'Aa'")
                .select("topic", "queueOffset", "msgId", "key"))
    assert query.count() == 2
    assert_df_equality(query, expected, ignore_row_order=True)
    plan = explain_text(query)
    assert "EqualTo(topic,TopicTest)" in plan and "EqualTo(key,Aa)" in plan
