"""Tail a RocketMQ broker store with Spark Structured Streaming (into the console or a parquet lake).

    python3 examples/streaming.py /var/rocketmq/store
    python3 examples/streaming.py /var/rocketmq/store --topics OrderTopic \
        --sink parquet --output /lake/orders --checkpoint /lake/_checkpoints/orders

The query reads the broker's own files while the broker writes them: it never emits a half-written
record, restarts from its checkpoint without losing or repeating a message, and fails clearly if
retention deleted files it still needed (`--no-fail-on-data-loss` skips them with a warning).
Every few seconds it prints how far behind the end of the log it is.
"""

from __future__ import annotations

import argparse
import json
import time

from rmqstore.spark import RmqStoreDataSource, session


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", help="the broker's storePathRootDir (holds commitlog/, consumequeue/, ...)")
    parser.add_argument("--topics",
                        help="comma-separated topics (reads their consume queues); default: the whole log")
    parser.add_argument("--starting-offsets", default="earliest",
                        help="earliest | latest | group:<consumerGroup> | JSON, used on the first start only")
    parser.add_argument("--max-offsets-per-trigger", type=int, help="messages per micro-batch at most")
    parser.add_argument("--sink", choices=("console", "parquet"), default="console")
    parser.add_argument("--output", help="parquet output directory (--sink parquet)")
    parser.add_argument("--checkpoint", help="checkpoint directory (required for parquet)")
    parser.add_argument("--trigger", default="2 seconds", help="processing-time trigger interval")
    parser.add_argument("--available-now", action="store_true", help="read what is there now, then stop")
    parser.add_argument("--no-fail-on-data-loss", action="store_true")
    args = parser.parse_args()
    if args.sink == "parquet" and not (args.output and args.checkpoint):
        parser.error("--sink parquet needs --output and --checkpoint")
    return args


def main() -> None:
    args = parse_args()
    spark = session(spark__sql__shuffle__partitions="2")
    spark.dataSource.register(RmqStoreDataSource)

    reader = (spark.readStream.format("rmqstore")
              .option("startingOffsets", args.starting_offsets)
              .option("failOnDataLoss", str(not args.no_fail_on_data_loss).lower()))
    if args.topics:
        reader = reader.option("topics", args.topics)
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    messages = reader.load(args.store)

    if args.sink == "console":
        shown = messages.selectExpr("topic", "queueId", "queueOffset", "commitLogOffset", "keys", "tags",
                                    "storeTimestamp", "substring(cast(body AS STRING), 1, 40) AS body")
        writer = shown.writeStream.format("console").option("truncate", "false")
    else:
        writer = (messages.writeStream.format("parquet").option("path", args.output)
                  .partitionBy("topic"))
    if args.checkpoint:
        writer = writer.option("checkpointLocation", args.checkpoint)
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    query = writer.start()

    while query.isActive:
        time.sleep(5)
        progress = query.lastProgress
        if progress and progress["sources"]:
            latest = json.loads(progress["sources"][0]["latestOffset"] or "{}")
            for store, report in latest.items():
                lag = report.get("lag", {})
                print(f"[{store}] batch {progress['batchId']}: {progress['numInputRows']} rows, "
                      f"behind the log end by {lag.get('messages', '?')} messages / "
                      f"{lag.get('bytes', '?')} bytes")
    query.awaitTermination()


if __name__ == "__main__":
    main()
