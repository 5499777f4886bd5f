"""Auto-registration of the "rmqstore" data source.

Spark imports every top-level `pyspark_*` module on the worker python's path and registers its
`DefaultSource` under `DefaultSource.name()`, so after `pip install rmqstore`
`spark.read.format("rmqstore")` works without a register call.

An exception while importing this module would disable Spark's lookup of every Python data
source, so an rmqstore that fails to import still registers "rmqstore": a stand-in whose use
raises the import error.
"""

from pyspark.sql.datasource import DataSource

try:
    from rmqstore.spark.source import RmqStoreDataSource as DefaultSource
except Exception as exc:
    _IMPORT_ERROR = f"the rmqstore package failed to import: {type(exc).__name__}: {exc}"

    class DefaultSource(DataSource):  # type: ignore[no-redef]
        """Stand-in registered when rmqstore cannot be imported; every use reports why."""

        @classmethod
        def name(cls) -> str:
            return "rmqstore"

        def schema(self):
            raise ImportError(_IMPORT_ERROR)

        def reader(self, schema):
            raise ImportError(_IMPORT_ERROR)

        def streamReader(self, schema):
            raise ImportError(_IMPORT_ERROR)


__all__ = ["DefaultSource"]
