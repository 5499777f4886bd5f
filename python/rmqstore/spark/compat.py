"""Whether the installed pyspark has the Python Data Source API the Python engine uses (design §7.3).

The Python engine needs pyspark 4.2 or newer: 4.0 has no filter pushdown (`pyspark.sql.datasource.Filter`),
4.1 no `pyspark.sql.streaming.datasource` (admission control, AvailableNow) and no `timezone` in
`to_arrow_schema`. The JVM engine has no such need. Checked by feature, so a pyspark that has them
works whatever its version says; without them the Python engine fails with one line saying so,
before pyspark's internals raise.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect

PYTHON_ENGINE_PYSPARK = "4.2"
NEEDED_NAMES = {
    "pyspark.sql.datasource": ("Filter", "DataSourceStreamReader"),
    "pyspark.sql.streaming.datasource": ("ReadLimit", "SupportsTriggerAvailableNow"),
}
"""Module -> names the Python engine imports from it that older pyspark lines lack."""


class PysparkTooOldError(ValueError):
    """The Python engine cannot run on this pyspark; the message is one line naming the one it needs."""


def has_data_source_api() -> bool:
    """True when pyspark has a Python Data Source API at all (`pyspark.sql.datasource`): the Python source
    can be registered, and where that API is older than the engine needs it fails on use with
    `require_python_engine`'s line. pyspark 3.5 has none: `format("rmqstore")` is the JVM engine only."""
    return importlib.util.find_spec("pyspark.sql.datasource") is not None


def missing_api() -> str | None:
    """The first piece of the Python Data Source API this pyspark lacks, or None when it has them all."""
    for module_name, names in NEEDED_NAMES.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return module_name
        absent = [name for name in names if not hasattr(module, name)]
        if absent:
            return f"{module_name}.{absent[0]}"
    from pyspark.sql.pandas.types import to_arrow_schema

    if "timezone" not in inspect.signature(to_arrow_schema).parameters:
        return "to_arrow_schema(timezone=...)"
    return None


def require_python_engine() -> None:
    """Raise PysparkTooOldError unless this pyspark can run the Python engine."""
    missing = missing_api()
    if missing is not None:
        import pyspark

        raise PysparkTooOldError(
            f"rmqstore: the Python engine needs pyspark {PYTHON_ENGINE_PYSPARK} or newer (this is pyspark "
            f"{pyspark.__version__}, without {missing}); use the JVM engine here: rmqstore.spark.session() "
            f"with the connector jar, or format(\"rmqstore\") with the jar on spark.jars")
