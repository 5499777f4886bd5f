"""`CREATE TABLE ... USING <rmqstore> OPTIONS (path ...)` on both engines: the table properties Spark adds
to a table's options (docs/contract.toml `options.spark_table`) are not user options, and a lookup on
the table is pushed down like one on `load()`; a misspelled option still fails naming the close one.
Spark gives a Python source's reader none of the table's options (`TABLE_WITHOUT_OPTIONS`): the Python
engine's query names them in `WITH (...)`."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.errors import AnalysisException, IllegalArgumentException, PythonException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from helpers.spark_expected import store_rows
from helpers.spark_stores import read_stats


def _table(spark: SparkSession, name: str, engine_format: str, options: str) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} USING `{engine_format}` OPTIONS ({options})")


def test_a_table_reads_like_load_and_pushes_a_key_down(spark: SparkSession, small_store: Path, engine: str,
                                                       engine_format: str, tmp_path: Path) -> None:
    rows = store_rows(small_store)
    key = next(r["keys"][0] for r in rows if r["keys"])
    name = f"rmq_table_{engine}"
    options = f"path '{small_store}', statsDir '{tmp_path / 'stats'}', mode 'FAILFAST'"
    _table(spark, name, engine_format, options)
    source = name
    if engine == "python":  # Spark passes a Python source's reader none of a table's options
        with pytest.raises(AnalysisException, match=r"passes none of a catalog table's OPTIONS"):
            spark.sql(f"SELECT count(*) FROM {name}").collect()
        source = f"{name} WITH ('path' = '{small_store}', 'statsDir' = '{tmp_path / 'stats'}')"
    try:
        got = spark.sql(f"SELECT * FROM {source} WHERE key = '{key}' ORDER BY commitLogOffset")
        expected = (spark.read.format(engine_format).load(str(small_store)).where(F.col("key") == key)
                    .orderBy("commitLogOffset"))
        assert_df_equality(got, expected)
        plans = [r for r in read_stats(tmp_path / "stats") if r["event"] == "plan"]
        assert plans[-1]["access"] == ["key-index"]
        decoded = sum(r["records_decoded"] for r in read_stats(tmp_path / "stats") if r["event"] == "read")
        assert 0 < decoded <= 2 * len([r for r in rows if key in (r["keys"] or [])]) < len(rows)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_a_misspelled_table_option_still_fails(spark: SparkSession, small_store: Path, engine: str,
                                               engine_format: str) -> None:
    name = f"rmq_misspelled_{engine}"
    try:
        with pytest.raises((AnalysisException, IllegalArgumentException, PythonException)) as error:
            _table(spark, name, engine_format, f"path '{small_store}', verifyCrcc 'false'")
            spark.sql(f"SELECT count(*) FROM {name}").collect()
        message = str(error.value)  # Spark lower-cases the names of a table's options
        assert "rmqstore option 'verifycrcc': unknown option; did you mean 'verifyCrc'?" in message
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
