"""SQL over a store: a temporary view, then queries that push down to the index.

    python examples/sql_view.py [store]

Each SELECT is planned afresh, so filters are pushed every time. (Spark 4.1-4.3 cache a filtered
reader on the view; if a later unfiltered query would reuse it, rmqstore fails the query with a
message instead of returning wrong rows: re-create the view with CREATE OR REPLACE to go on.)
"""

from __future__ import annotations

from _common import store_from_argv

from rmqstore.spark import session


def main() -> None:
    store = store_from_argv()
    spark = session()
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW messages USING rmqstore OPTIONS (path '{store}')")
    query = ("SELECT topic, queueId, queueOffset, msgId, key, storeTimestamp FROM messages "
             "WHERE key = 'order-42'")
    print(spark.sql("EXPLAIN FORMATTED " + query).first()[0])  # PushedFilters: [..., EqualTo(key,order-42)]
    spark.sql(query).show(truncate=False)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW per_topic USING rmqstore OPTIONS (path '{store}')")
    spark.sql("SELECT topic, count(*) AS messages FROM per_topic "
              "WHERE topic IN ('OrderEvents', 'PaymentTopic') GROUP BY topic ORDER BY topic").show()
    spark.stop()


if __name__ == "__main__":
    main()
