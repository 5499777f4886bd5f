"""Growth benchmark (issue #22 item 2): each query's cost on production-shape stores of increasing size,
both engines, cold and warm; a cost that stays flat as the store grows has a growth exponent near 0.

Run: `RMQSTORE_GROWTH_JSON=growth.json python3 -m pytest -m bench -s -p no:cacheprovider
tests/bench/test_bench_growth.py`. Environment:
- RMQSTORE_GROWTH_SIZES: GiB of commit log of each store, default `1,4,12` (quick: `0.25,0.5,1`);
- RMQSTORE_GROWTH_WIDE: GiB of a store of 3,000 topics x 8 queues measured too and reported beside the
  series (not in the fit), default `1.3`, empty to skip;
- RMQSTORE_GROWTH_DIR: where stores are written once and kept (default ~/.cache/rmqstore/bench-growth);
- RMQSTORE_GROWTH_ENGINES (`jvm,python`), RMQSTORE_GROWTH_QUERIES (default: all of growth_probe.queries);
- RMQSTORE_GROWTH_JSON: file the results are written to as JSON (after every measurement); results
  already in it are kept and not measured again, so runs add up (the table covers them all);
- RMQSTORE_GROWTH_TIMEOUT: seconds one probe may take (default 3600), reported as `timeout_s` beyond.
Stores come from `rmqstore.writer.bulk` with the broker's geometry (1 GiB segments, index files of 5M
slots x 20M entries, consume queues of 300k units): 100 topics x 8 queues, one of them 1 % of the
records. Each (store, engine, query) runs in a fresh driver (growth_probe.py): fresh cache directory,
the store's pages dropped, a cold run, then a warm run in the same session. The table gives wall time
as a multiple of `spark.range(1).collect()`, CPU seconds, the share of the log resident after the cold
run, and the growth exponent: the slope of log(cost) over log(store size). Only each query's row
count is asserted, never a timing.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bench_stores import cached_bulk_store

from rmqstore.writer.bulk import BulkShape

pytestmark = pytest.mark.bench

GIB = 1 << 30
SIZES = [float(s) for s in os.environ.get("RMQSTORE_GROWTH_SIZES", "1,4,12").split(",") if s]
WIDE = os.environ.get("RMQSTORE_GROWTH_WIDE", "1.3")
BENCH_DIR = Path(os.environ.get("RMQSTORE_GROWTH_DIR", Path.home() / ".cache" / "rmqstore" / "bench-growth"))
ENGINES = os.environ.get("RMQSTORE_GROWTH_ENGINES", "jvm,python").split(",")
QUERIES = os.environ.get("RMQSTORE_GROWTH_QUERIES",
                         "key1,topic1pct,window1m,plan,key500,uniqKey,msgId,backlog,count").split(",")
OUT = os.environ.get("RMQSTORE_GROWTH_JSON")
PROBE = Path(__file__).with_name("growth_probe.py")
PROBE_TIMEOUT_S = float(os.environ.get("RMQSTORE_GROWTH_TIMEOUT", "3600"))
"""Seconds one probe may take; a probe that takes longer is reported as a timeout (a cost, not a failure)."""
COSTS = {"cold×": "cold_ratio", "warm×": "warm_ratio", "cpu s": "cold_cpu_s", "res MB": "resident_total",
         "log res": "resident_log_share"}
"""Table rows per query: cold and warm wall time / range(1), cold CPU seconds, store MB resident after the
cold run, and the share of the commit log among them."""


def _store(gib: float, topics: int) -> tuple[Path, dict]:
    name = f"{gib:g}g-{topics}t"
    return cached_bulk_store(BENCH_DIR / name, BulkShape(target_bytes=int(gib * GIB), topics=topics, seed=22))


def _probe(store: Path, summary: dict, engine: str, query: str) -> dict:
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=BENCH_DIR))
    spec = {"store": str(store), "summary": summary, "engine": engine, "query": query, "cache": str(cache)}
    probe = subprocess.Popen([sys.executable, str(PROBE), json.dumps(spec)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=PROBE.parent, start_new_session=True)
    try:
        stdout, stderr = probe.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"engine": engine, "query": query, "sane": True, "timeout_s": PROBE_TIMEOUT_S}
    finally:
        if probe.poll() is None:  # timed out or interrupted: end the probe's session (driver, JVM, workers)
            os.killpg(probe.pid, signal.SIGKILL)
            probe.communicate()
        shutil.rmtree(cache, ignore_errors=True)
    lines = [line for line in stdout.splitlines() if line.startswith("GROWTH ")]
    if probe.returncode or not lines:
        return {"engine": engine, "query": query, "sane": False, "error": stderr[-3000:]}
    result = json.loads(lines[-1][len("GROWTH "):])
    result["resident_total"] = sum(result["resident"].values()) / 1e6
    return result


def growth_exponent(sizes: list[float], costs: list[float]) -> float | None:
    """Least-squares slope of log(cost) over log(size): 0 flat, 1 proportional to the store."""
    points = [(math.log(s), math.log(max(c, 1e-3))) for s, c in zip(sizes, costs, strict=True)
              if c is not None]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return round(sum((x - mx) * (y - my) for x, y in points) / sxx, 2) if sxx else None


def _table(results: list[dict], engines: list[str], queries: list[str], stores: list[str], fitted: list[str],
           log_gib: dict[str, float]) -> str:
    lines = []
    header = f"{'engine':6} {'query':9} {'cost':6} " + " ".join(f"{s:>10}" for s in stores) + "  growth"
    lines.append(header)
    for engine in engines:
        for query in queries:
            for label, field in COSTS.items():
                mine = [r for r in results if r["engine"] == engine and r["query"] == query]
                row = {r["store"]: r.get(field) for r in mine}
                late = {r["store"] for r in mine if "timeout_s" in r}
                cells = " ".join(f"{row[s]:>10.4g}" if row.get(s) is not None
                                 else f"{'timeout' if s in late else '-':>10}" for s in stores)
                slope = growth_exponent([log_gib[s] for s in fitted if row.get(s) is not None],
                                        [row[s] for s in fitted if row.get(s) is not None])
                lines.append(f"{engine:6} {query:9} {label:6} {cells}  {slope if slope is not None else '-'}")
    return "\n".join(lines)


def _load(path: str | None) -> list[dict]:
    """Results of earlier runs kept in the JSON file (errors are measured again)."""
    if not path or not Path(path).exists():
        return []
    return [r for r in json.loads(Path(path).read_text())["results"] if "error" not in r]


@pytest.mark.timeout(0)  # hours at the default sizes: each probe has its own limit (RMQSTORE_GROWTH_TIMEOUT)
def test_growth() -> None:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    plan = [(f"{gib:g}G", gib, 100) for gib in SIZES]
    plan += [(f"{WIDE}G×3000", float(WIDE), 3000)] if WIDE else []
    results = _load(OUT)
    done = {(r["store"], r["engine"], r["query"]) for r in results}
    stores = {name: _store(gib, topics) for name, gib, topics in plan}
    for query in QUERIES:  # a query's whole series first: a cut-short run still fits what it measured
        for engine in ENGINES:
            for name, _, topics in plan:
                if (name, engine, query) in done:
                    continue
                store, summary = stores[name]
                result = {"store": name, "log_bytes": summary["log_bytes"], "topics": topics,
                          **_probe(store, summary, engine, query)}
                results.append(result)
                print(json.dumps(result), flush=True)
                if OUT:
                    Path(OUT).write_text(json.dumps({"results": results}, indent=1))
    log_gib = {r["store"]: r["log_bytes"] / GIB for r in results}
    topics = {r["store"]: r["topics"] for r in results}
    names = sorted(log_gib, key=lambda name: (topics[name], log_gib[name]))
    fitted = [name for name in names if topics[name] == 100]
    engines = list(dict.fromkeys(r["engine"] for r in results))
    queries = list(dict.fromkeys(r["query"] for r in results))
    exponents = {
        f"{engine}/{query}/{field}": growth_exponent(
            [log_gib[r["store"]] for r in rows], [r.get(field) for r in rows])
        for engine in engines for query in queries
        for field in [*COSTS.values(), "jvm_peak_rss", "cache_bytes"]
        for rows in [[r for r in results if r["engine"] == engine and r["query"] == query
                      and r["store"] in fitted and r.get(field) is not None]]
    }
    print("\n" + _table(results, engines, queries, names, fitted, log_gib))
    if OUT:
        Path(OUT).write_text(json.dumps({"results": results, "growth_exponents": exponents}, indent=1))
    insane = [(r["store"], r["engine"], r["query"], r.get("result"), r.get("error", "")[-500:])
              for r in results if not r["sane"]]
    assert not insane, insane
