"""rmqstore: read Apache RocketMQ broker stores, with Apache Spark or without it.

Docstrings cite the store format by section ("§2.12", "spec §2.12"): see docs/format.md.
"""

__version__ = "0.1.0"

from rmqstore.store import Store

__all__ = ["Store", "__version__"]
