"""Spark-independent read planning (design §3).

A conjunction of `predicates` -> `ReadPlan`: the partitions to read (index probes, consume-queue
slices, commit-log byte ranges, single offsets) plus the predicates every decoded row must still
satisfy (`confirm`). Index and queue candidates are never trusted: every consumed predicate is
evaluated exactly on the decoded rows.
"""
