"""The workload suite (tests/workloads/README.md): every case of tests/workloads/cases on the Python
planner (plan and run the tasks without Spark: access path, task count, offsets, error, skip counts)
and through Spark on both engines (rows or error, skip counts); WorkloadSuite.scala runs the same
cases on the JVM planner and reader. Design §7: one damage rule, held alike by both engines.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from chispa import assert_df_equality
from expect import Expected, oracle_offsets, resolve
from stores import build_all, load_cases

from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, plan_read
from rmqstore.plan.predicates import Compare, InSet, Predicate
from rmqstore.spark.options import parse_options
from rmqstore.spark.reader import _decode_columns, _option_predicates
from rmqstore.spark.stores import open_store
from rmqstore.store import StoreError

CASES = load_cases()
BATCH = [c for c in CASES if c["query"].get("read", "batch") == "batch"]
STREAM_WAIT_S = 60


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every case's store (each recipe built once) and manifest."""
    return build_all(tmp_path_factory.mktemp("workloads"), CASES)


def predicates(filters: list[list]) -> list[Predicate]:
    """A case's filter as planner predicates (storeTimestamp in epoch ms -> microseconds)."""
    out: list[Predicate] = []
    for column, op, value in filters:
        scaled = value * 1000 if column == "storeTimestamp" else value
        out.append(InSet(column, tuple(scaled)) if op == "in" else Compare(column, op, scaled))
    return out


def sql(filters: list[list]) -> str:
    """A case's filter as a Spark SQL condition."""
    def literal(column: str, value: object) -> str:
        if column == "storeTimestamp":
            return f"timestamp_millis({value})"
        return f"'{value}'" if isinstance(value, str) else str(value)
    parts = [f"{c} IN ({', '.join(literal(c, v) for v in value)})" if op == "in"
             else f"{c} {op} {literal(c, value)}" for c, op, value in filters]
    return " AND ".join(parts) or "true"


def _options(case: dict, path: str) -> dict[str, str]:
    return {"path": path, **case["options"]}


@pytest.mark.parametrize("case", BATCH, ids=[c["name"] for c in BATCH])
def test_python_planner(case: dict, built: dict) -> None:
    """Plan as the Python engine's reader does, run every task on the Store API, confirm the rows."""
    where = built[case["name"]]
    want = resolve(case, where["manifest"])
    options = parse_options({k.lower(): v for k, v in _options(case, where["store"]).items()})
    filters = predicates(case["query"]["filter"])
    store = open_store(options, options.paths[0])
    got: list[int] = []
    error = None
    try:
        every = [*filters, *_option_predicates(options, store)]
        pushed = [*(filters if options.pushdown else []), *_option_predicates(options, store)]
        plan = plan_read([store], [pushed], PlanSettings(
            max_bytes_per_partition=options.max_bytes_per_partition, min_partitions=options.min_partitions,
            key_probe_partition_threshold=options.key_probe_partition_threshold))
        settings = ReadSettings(check_crc=options.verify_crc, mode=options.mode,
                                decompress=options.decompress)
        columns = _decode_columns(["commitLogOffset"], every)
        try:
            for task in plan.tasks:
                for batch in run_task(task, store, columns, settings):
                    got.extend(confirm(batch, every).column("commitLogOffset").to_pylist())
        except StoreError as exc:
            error = str(exc)
        skipped = (store.stats.invalid_records_skipped, store.stats.bytes_skipped)
    finally:
        store.close()
    if want.access is not None:
        assert plan.access == [want.access], plan.notes
    if want.tasks is not None:
        assert len(plan.tasks) == want.tasks, plan.tasks
    _check_outcome(want, got, error, skipped)


def _check_outcome(want: Expected, got: list[int], error: str | None,
                   skipped: tuple[int, int] | None) -> None:
    if want.error is not None:
        assert error is not None, f"no error; {len(got)} rows (a silent skip in FAILFAST)"
        for part in want.error:
            assert part in error, f"{part!r} not in {error!r}"
        return
    assert error is None, error
    want.check_offsets(got)
    if want.skipped_records is not None and skipped is not None:
        assert skipped[0] == want.skipped_records, skipped
        if want.skipped_bytes is not None:
            assert skipped[1] == want.skipped_bytes, skipped


@pytest.mark.spark
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_spark(case: dict, built: dict, spark, engine_format: str, tmp_path: Path) -> None:
    """The case through Spark: batch (`where` pushed or not, or `count()`: the plan each engine logs to
    `statsDir`, rows, error, skip counts) or an availableNow stream (rows or error)."""
    where = built[case["name"]]
    want = resolve(case, where["manifest"])
    query = case["query"]
    stats = tmp_path / "stats"
    got: list[int] = []
    error = None
    if query.get("read", "batch") == "stream":
        got, error = _stream(spark, engine_format, _options(case, where["store"]), tmp_path)
        skipped = None
    else:
        options = {**_options(case, where["store"]), "statsDir": str(stats)}
        df = spark.read.format(engine_format).options(**options).load().where(sql(query["filter"]))
        try:
            result = df.count() if query.get("count") else [
                r.commitLogOffset for r in df.select("commitLogOffset").collect()]
        except Exception as exc:  # Spark wraps the engine's error (Py4J / PythonException)
            result, error = [], str(exc)
        events = [json.loads(line) for f in stats.glob("*") for line in f.read_text().splitlines()]
        plans = [e for e in events if e["event"] == "plan"]  # the engine's own plan, pushdown included
        assert plans and (plans[0]["access"], plans[0]["tasks"]) == ([want.access], want.tasks), plans
        reads = [e for e in events if e["event"] == "read"]  # of this one action
        skipped = (sum(r["invalid_records_skipped"] for r in reads), sum(r["bytes_skipped"] for r in reads))
        if query.get("count") and error is None:
            assert result == want.count
            return
        got = result
        if error is None and want.error is None and want.offsets is not None:
            expected = spark.createDataFrame([(o,) for o in want.offsets], "commitLogOffset long")
            assert_df_equality(df.select("commitLogOffset"), expected, ignore_row_order=True)
    _check_outcome(want, got, error, skipped)


def _stream(spark, source: str, options: dict[str, str], tmp_path: Path) -> tuple[list[int], str | None]:
    """commitLogOffsets an availableNow stream writes to a memory sink, or its error."""
    name = f"workload_{uuid.uuid4().hex[:8]}"
    path = options.pop("path")
    query = (spark.readStream.format(source).options(**options).load(path).select("commitLogOffset")
             .writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    try:
        finished = query.awaitTermination(STREAM_WAIT_S)
    except Exception as exc:  # the stream failed: StreamingQueryException
        return [], str(exc)
    finally:
        query.stop()
    assert finished, f"the availableNow stream did not finish in {STREAM_WAIT_S} s"
    rows = [r.commitLogOffset for r in spark.table(name).collect()]
    spark.sql(f"DROP VIEW IF EXISTS {name}")
    return rows, None


@pytest.mark.parametrize("case", [c for c in CASES if "fixture" in c["store"]], ids=lambda c: c["name"])
def test_fixture_expectations_are_rocketmqs(case: dict) -> None:
    """A fixture case expects what RocketMQ's own decoding of the store (oracle.json) says."""
    truth = oracle_offsets(case["store"]["fixture"], case["query"]["filter"], case["options"].get("topics"))
    want = resolve(case, None)
    want.check_offsets(truth)
