package io.rmqstore.spark

import org.apache.spark.sql.connector.read.InputPartition

import plan.{Predicate, ReadTask}

/** One task plus what the reader needs to confirm and label its rows; small (a range or a chunk of
  * offsets, the consumed predicates), the Hadoop configuration travels as a broadcast.
  */
final case class RmqInputPartition(
    index: Int,
    task: ReadTask,
    path: String,
    broker: String,
    logEnd: Long,
    predicates: Seq[Predicate]
) extends InputPartition
