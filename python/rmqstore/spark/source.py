"""The Python Data Source "rmqstore": `spark.read.format("rmqstore").load(storeDir)`.

Registration is automatic after `pip install` (`pyspark_rmqstore.DefaultSource`, found by Spark's
lookup of top-level `pyspark_*` modules); `spark.dataSource.register(RmqStoreDataSource)` works too.

Keys: `WHERE key = 'v'` compares the whole KEYS property (plain SQL, the same with and without
pushdown; the index is probed with v's first token and the whole string is confirmed). To find
messages having v among several keys (RocketMQ's `queryMsgByKey` meaning) use
`.option("keys", "v1,v2")` (index-backed); `array_contains(keys, 'v')` is correct too but Spark
pushes only `IsNotNull(keys)` for it, so it scans.

Stale readers (Spark 4.1-4.3): see `rmqstore.spark.guard`; build one DataFrame per query. On a
cluster master no filter is pushed (a note says so once per application).

Filter pushdown and `spark.sql.python.filterPushdown.enabled`: Spark plans a read in one of two
Python workers. With the conf on and at least one pushable filter, `data_source_pushdown_filters`
calls `reader()` and then `pushFilters`. Otherwise `plan_data_source_read` calls `reader()` and,
when the conf is off, fails with DATA_SOURCE_PUSHDOWN_DISABLED if the reader's class overrides
`pushFilters` — even for reads without filters. That worker never calls pushFilters, so `reader()`
returns the reader without it there: with the conf off every read still works as a full scan
(Spark applies the filters), and nothing is lost when it is on. That worker holds the conf's value
in its planning frame (`enable_pushdown`); when it is off, a note says so once per application.

Paths and stores are checked in `schema()`, which Spark calls in `load()`: a wrong path or option
fails where the DataFrame is made, not at its first action.

Readers are imported when used; `pyspark_rmqstore` guards the import of this module, because an
import error during Spark's automatic lookup would disable every Python data source.
"""

from __future__ import annotations

import sys

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from rmqstore.spark.compat import require_python_engine
from rmqstore.spark.contract_options import PATH
from rmqstore.spark.errors import cause_first
from rmqstore.spark.options import OptionError, parse_options
from rmqstore.spark.schema import table_schema, validate_schema

_PLAIN_PLANNER_FILE = "plan_data_source_read.py"
_PLAIN_PLANNER_CONF = "enable_pushdown"

PUSHDOWN_OFF_NOTE = (
    "filter pushdown is off in this Spark session, so rmqstore reads whole stores and Spark filters "
    "the rows (no index lookups). Turn it on with "
    "spark.conf.set(\"spark.sql.python.filterPushdown.enabled\", \"true\") "
    "or start Spark with rmqstore.spark.session().")
CLUSTER_NOTE = (
    "the Python engine pushes no filters on the cluster master {master}: there Spark 4.1-4.3 may reuse a "
    "filtered query's reader for a later query on the same DataFrame or view, on any executor, and no check "
    "can catch it (wrong rows). Every query is a full scan that Spark filters (correct, without index or "
    "queue lookups). The JVM engine (format(\"rmqstore\") with the connector jar, rmqstore.spark.session()) "
    "has no such reuse and pushes filters on a cluster.")

TABLE_WITHOUT_OPTIONS = (
    "Spark gave this reader no options at all: it passes none of a catalog table's OPTIONS to a Python "
    "data source (CREATE TABLE ... USING rmqstore_python; PythonDataSourceV2.getTable drops them). Give "
    "them with the query (SELECT ... FROM t WITH ('path' = '/path/to/store')), use a temporary view, or "
    "the JVM engine (USING rmqstore with the connector jar), whose tables keep their options.")


def _plain_planner_pushdown() -> bool | None:
    """None unless Spark's plain read planner (which never calls pushFilters) asks for a reader;
    then whether the session has filter pushdown on (that planner's `enable_pushdown`)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_PLAIN_PLANNER_FILE):
            return bool(frame.f_locals.get(_PLAIN_PLANNER_CONF, True))
        frame = frame.f_back
    return None


class RmqStoreDataSource(DataSource):
    """A RocketMQ broker store (or several, one per broker) as a table; see design §2–§3."""

    @classmethod
    def name(cls) -> str:
        return "rmqstore"

    def schema(self) -> StructType:
        from rmqstore.spark.stores import check_stores

        with cause_first():
            require_python_engine()  # an older pyspark fails here, at load(), in one line
            check_stores(parse_options(self.options))  # wrong paths and options fail at load()
        return table_schema()

    def reader(self, schema: StructType) -> DataSourceReader:
        with cause_first():
            require_python_engine()  # schema() is not called when the user gives the schema
            from rmqstore.notes import note_once
            from rmqstore.spark.guard import cluster_master
            from rmqstore.spark.reader import PushdownStoreReader, StoreReader

            if not self.options:
                raise OptionError(PATH, TABLE_WITHOUT_OPTIONS)
            options = parse_options(self.options)
            schema = validate_schema(schema)
            session_pushdown = _plain_planner_pushdown()
            if session_pushdown is False and options.pushdown:
                note_once(PUSHDOWN_OFF_NOTE)
            if not options.pushdown or session_pushdown is not None:
                return StoreReader(options, schema)
            master = cluster_master()
            if master is not None:
                note_once(CLUSTER_NOTE.format(master=master))
                return StoreReader(options, schema)
            return PushdownStoreReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        with cause_first():
            require_python_engine()
            from rmqstore.spark.stream import StoreStreamReader

            return StoreStreamReader(self.options, validate_schema(schema))


class RmqStorePythonDataSource(RmqStoreDataSource):
    """The Python engine under the name "rmqstore_python", usable beside the JVM connector (which
    takes "rmqstore" when its jar is loaded); see `rmqstore.spark.engine`."""

    @classmethod
    def name(cls) -> str:
        return "rmqstore_python"
