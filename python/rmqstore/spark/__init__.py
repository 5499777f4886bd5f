"""Apache Spark integration: the "rmqstore" Python Data Source and a ready session.

    from rmqstore.spark import session
    spark = session()
    df = spark.read.format("rmqstore").load("/path/to/store")
"""

from rmqstore.spark.engine import served_by
from rmqstore.spark.jar import connector_jar
from rmqstore.spark.lag import lag
from rmqstore.spark.session import session
from rmqstore.spark.source import RmqStoreDataSource

__all__ = ["RmqStoreDataSource", "connector_jar", "lag", "served_by", "session"]
