"""Find messages by business key, unique key (client id) or broker message id.

    python examples/key_lookup.py [store] [key]

`key = v` compares the whole KEYS property (plain SQL); a message sent with keys "a b" has
key = 'a b'. To find messages having v among their keys (RocketMQ's meaning), use the `keys`
option, or filter the `keys` array column with array_contains (that filter runs in Spark without
index help, so add the option for large stores).
"""

from __future__ import annotations

import sys

from _common import store_from_argv
from pyspark.sql import functions as F

from rmqstore.spark import session


def main() -> None:
    store = store_from_argv()
    key = sys.argv[2] if len(sys.argv) > 2 else "order-23"  # an order and its payment
    spark = session()
    columns = ["topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "key",
               "storeTimestamp"]

    print(f"key = {key!r} (whole KEYS string):")
    exact = spark.read.format("rmqstore").load(store).where(F.col("key") == key).select(*columns)
    exact.show(truncate=False)

    print(f"messages having {key!r} among their keys:")
    spark.read.format("rmqstore").option("keys", key).load(store).select(*columns).show(truncate=False)

    hit = spark.read.format("rmqstore").option("keys", key).load(store).select("msgId", "uniqKey").first()
    if hit is not None:
        print("the same message by broker msgId and by client uniqKey:")
        spark.read.format("rmqstore").load(store).where(F.col("msgId") == hit.msgId).select(*columns).show()
        if hit.uniqKey:
            spark.read.format("rmqstore").load(store).where(F.col("uniqKey") == hit.uniqKey) \
                .select(*columns).show()
    spark.stop()


if __name__ == "__main__":
    main()
