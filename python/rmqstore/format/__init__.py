"""Byte layouts of a RocketMQ store: pure functions over bytes and numpy buffers.

No file system and no Spark here. Section numbers (§) refer to
shared/spec/rocketmq-store-format.md.
"""
