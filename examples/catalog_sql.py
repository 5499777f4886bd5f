"""Topics as SQL tables with the JVM engine's catalog (README "Catalog"): no view to create.

    python examples/catalog_sql.py [store]

The catalog `rmq` names the store `broker_a`; `rmq.broker_a.<topic>` reads one topic (the topic is a
pushed filter, so a key lookup still goes through the index) and `rmq.broker_a._all` every topic.
Retry, dead-letter and system topics are tables too: quote them with back-ticks.
"""

from __future__ import annotations

from _common import store_from_argv

from rmqstore.spark import session


def main() -> None:
    store = store_from_argv()
    spark = session(engine="jvm", **{"spark.sql.catalog.rmq": "io.rmqstore.spark.RmqCatalog",
                                     "spark.sql.catalog.rmq.store.broker_a": store})
    spark.sql("SHOW TABLES IN rmq.broker_a").show(100, truncate=False)
    query = "SELECT queueId, queueOffset, msgId, key FROM rmq.broker_a.OrderEvents WHERE key = 'order-42'"
    # PushedFilters: [EqualTo(topic,OrderEvents), IsNotNull(key), EqualTo(key,order-42)]
    print(spark.sql("EXPLAIN FORMATTED " + query).first()[0])
    spark.sql(query).show(truncate=False)
    spark.sql("SELECT topic, count(*) AS messages FROM rmq.broker_a._all "
              "GROUP BY topic ORDER BY topic").show(100, truncate=False)
    dead = [row.tableName for row in spark.sql("SHOW TABLES IN rmq.broker_a").collect()
            if row.tableName.startswith("%DLQ%")]
    for table in dead[:1]:  # a dead-letter queue: why each message is there (docs/format.md §2.10)
        spark.sql("SELECT storeTimestamp, key, reconsumeTimes, properties['RETRY_TOPIC'] AS from_topic, "
                  f"properties['ORIGIN_MESSAGE_ID'] AS original FROM rmq.broker_a.`{table}` "
                  "ORDER BY storeTimestamp LIMIT 5").show(truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
