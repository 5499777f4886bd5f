"""rmqstore: read Apache RocketMQ broker stores, with Apache Spark or without it."""

__version__ = "0.1.0"
