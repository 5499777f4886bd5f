"""rmqstore: read Apache RocketMQ broker stores, with Apache Spark or without it."""

__version__ = "0.1.0"

from rmqstore.store import Store

__all__ = ["Store", "__version__"]
