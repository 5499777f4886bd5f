"""Consumer-group backlog: messages a group has not consumed yet, per queue.

    python examples/consumer_backlog.py [store] [group]

`startingOffsets=group:<group>` starts every queue of the group's topics at the group's
committed offset (config/consumerOffset.json); the table then holds exactly the backlog.
"""

from __future__ import annotations

import sys

from _common import store_from_argv
from pyspark.sql import functions as F

from rmqstore.spark import session


def main() -> None:
    store = store_from_argv()
    group = sys.argv[2] if len(sys.argv) > 2 else "cg-analytics"
    spark = session()
    backlog = (spark.read.format("rmqstore").option("startingOffsets", f"group:{group}").load(store)
               .groupBy("topic", "queueId")
               .agg(F.count("*").alias("backlog"), F.min("storeTimestamp").alias("oldest_unconsumed"))
               .orderBy("topic", "queueId"))
    print(f"backlog of consumer group {group!r}:")
    backlog.show(100, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
