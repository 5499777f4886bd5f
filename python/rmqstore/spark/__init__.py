"""Apache Spark integration: the "rmqstore" Python Data Source and a ready session.

    from rmqstore.spark import session
    spark = session()
    df = spark.read.format("rmqstore").load("/path/to/store")
"""

from typing import Any

from rmqstore.spark.engine import served_by
from rmqstore.spark.jar import connector_jar
from rmqstore.spark.lag import lag
from rmqstore.spark.life import message_life
from rmqstore.spark.session import session
from rmqstore.spark.trace import trace_records

__all__ = [
    "RmqStoreDataSource", "connector_jar", "lag", "message_life", "served_by", "session", "trace_records",
]


def __getattr__(name: str) -> Any:
    """`RmqStoreDataSource` on first use: pyspark 3.5 has no Python Data Source API, only the JVM engine."""
    if name == "RmqStoreDataSource":
        from rmqstore.spark.source import RmqStoreDataSource

        return RmqStoreDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
