"""Audit or export a time window; only that slice of the commit log is read.

    python examples/time_window.py [store] [start ISO time] [minutes]
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta

from _common import store_from_argv
from pyspark.sql import functions as F

from rmqstore.spark import session


def main() -> None:
    store = store_from_argv()
    spark = session()
    if len(sys.argv) > 2:
        start = datetime.fromisoformat(sys.argv[2]).replace(tzinfo=UTC)
    else:
        start = spark.read.format("rmqstore").load(store).agg(F.min("storeTimestamp")).first()[0] \
            + timedelta(hours=1)
    minutes = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    window = (spark.read.format("rmqstore").load(store)
              .where((F.col("storeTimestamp") >= start)
                     & (F.col("storeTimestamp") < start + timedelta(minutes=minutes))))
    window.groupBy("topic", "tags").agg(F.count("*").alias("messages"),
                                        F.sum(F.length("body")).alias("body_bytes")) \
        .orderBy("topic", "tags").show(50, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
