"""Messages per topic answered from metadata (README "Pushdown": Aggregates and LIMIT), system topics too.

    python examples/topic_counts.py [store]

On the JVM engine with `verifyCrc=false`, `GROUP BY topic` counts are read off the consume queues without
reading the records (explain shows PushedAggregation). The demo store's list shows what a broker keeps
besides the business topics: SCHEDULE_TOPIC_XXXX (delayed messages and retries waiting, docs/format.md
§2.10), rmq_sys_wheel_timer (5.x timer messages waiting), the transaction half and op topics, and a
`%RETRY%<group>` and `%DLQ%<group>` topic per consumer group that failed on messages.
"""

from __future__ import annotations

from _common import store_from_argv

from rmqstore.spark import session


def main() -> None:
    store = store_from_argv()
    spark = session(engine="jvm")
    counts = (spark.read.format("rmqstore").option("verifyCrc", "false").load(store)
              .groupBy("topic").count().orderBy("topic"))
    counts.explain("formatted")  # BatchScan rmqstore: PushedAggregation: [COUNT(*), GROUP BY topic]
    counts.show(100, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
