"""The corruption campaign through Spark (`campaign.py --spark`): commit-log and consume-queue damage
read by Spark on both engines, held to the one damage rule (design §7).

    python3 tests/hostile/campaign.py --spark --mutants 50 --minutes 8 --seed 1

Each mutant is a copy of campaign.py's demo store with one in-place damage of a commit-log segment
or a consume-queue file (bit flips, garbage, a zeroed range: `campaign.py` mutators); it is read by
Spark in every way in `READS` (batch scan, batch `topics`, log stream, `topics` stream, streams
with Trigger.AvailableNow), in FAILFAST and PERMISSIVE, on both engines. Findings:

- disagreement: the engines differ (one fails and the other does not, or other rows);
- silent skip: FAILFAST returned fewer rows than the undamaged store without an error, where the
  damage is not in the log's last record (damage there is a tail still being written, held);
- phantom: rows at offsets where the undamaged store has no record;
- hang: a read still running at the timeout (stopped or cancelled);
- unnamed: an error that does not name the store, twice (a bare exception, or Spark itself failing,
  e.g. a Python worker that could not connect back on an overloaded machine); not a disagreement.
Truth is the undamaged base store read by the Store API (FAILFAST), which the workload suite
(tests/workloads) proves exact on sound stores. The counts go to stdout and `--out`/spark-summary.json.
"""

from __future__ import annotations

import collections
import json
import os
import random
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field

import numpy as np

FINDINGS = ("disagreement", "silent skip", "phantom", "hang", "unnamed")
READS = ("batch-scan", "batch-topics", "stream-log", "stream-topics")
MODES = ("FAILFAST", "PERMISSIVE")
TOPICS = "OrderEvents,PaymentTopic"
"""The topics of the `topics` reads (two of the demo store's topics)."""


@dataclass(frozen=True)
class Damage:
    kind: str
    what: str
    path: str
    physical: int | None
    """Commit-log damage: the physical offset of its first changed byte."""


@dataclass(frozen=True)
class Outcome:
    kind: str  # "rows", "error" (naming the store), "unnamed" (an error that does not) or "hang"
    rows: frozenset[int] = frozenset()
    error: str = ""


@dataclass
class Tally:
    """Counts of a campaign run, and an example of each finding."""

    outcomes: collections.Counter = field(default_factory=collections.Counter)
    findings: collections.Counter = field(default_factory=collections.Counter)
    examples: list[dict] = field(default_factory=list)
    mutants: int = 0
    reads: int = 0


def truth(base: str) -> dict[str, frozenset[int]]:
    """Every read's rows on the undamaged store."""
    from rmqstore.store import Store

    with Store.open(base) as store:
        rows = [r for b in store.scan(columns=["topic", "commitLogOffset"]) for r in b.to_pylist()]
    everything = frozenset(r["commitLogOffset"] for r in rows)
    topics = frozenset(r["commitLogOffset"] for r in rows if r["topic"] in TOPICS.split(","))
    return {"batch-scan": everything, "stream-log": everything,
            "batch-topics": topics, "stream-topics": topics}


def damage(rng: random.Random, store: str, files: dict[str, list[str]]) -> Damage | None:
    """One in-place damage of a commit-log segment or a consume-queue file (None: no byte changed)."""
    from campaign import bit_flips, garbage, zeroed

    kind = rng.choice(("commitlog", "consumequeue"))
    rel = rng.choice(files[kind])
    path = os.path.join(store, rel)
    with open(path, "rb") as fh:
        before = np.frombuffer(fh.read(), dtype=np.uint8)
    what = rng.choice((bit_flips, garbage, zeroed))(rng, path)
    with open(path, "rb") as fh:
        after = np.frombuffer(fh.read(), dtype=np.uint8)
    changed = np.flatnonzero(before[: len(after)] != after[: len(before)])
    if not len(changed):
        return None
    physical = int(os.path.basename(path)) + int(changed[0]) if kind == "commitlog" else None
    return Damage(kind, f"{rel}: {what}", path, physical)


def read(spark, source: str, how: str, mode: str, store: str, timeout: float) -> Outcome:
    """One Spark read of `store`: its rows, its error (an error that does not name the store, such as a
    Python worker that failed to connect back under load, is tried once more, then is "unnamed") or a hang."""
    outcome = _read_once(spark, source, how, mode, store, timeout)
    if outcome.kind == "error" and store not in outcome.error:
        outcome = _read_once(spark, source, how, mode, store, timeout)
        if outcome.kind == "error" and store not in outcome.error:
            return Outcome("unnamed", error=outcome.error)
    return outcome


def _read_once(spark, source: str, how: str, mode: str, store: str, timeout: float) -> Outcome:
    options = {"mode": mode, **({"topics": TOPICS} if how.endswith("topics") else {})}
    if how.startswith("stream"):
        return _stream(spark, source, store, options, timeout)
    result: list[Outcome] = []

    def collect() -> None:
        try:
            df = spark.read.format(source).options(**options).load(store).select("commitLogOffset")
            result.append(Outcome("rows", frozenset(r[0] for r in df.collect())))
        except Exception as exc:  # Spark wraps the engine's error (Py4J / PythonException)
            result.append(Outcome("error", error=str(exc)[:4000]))

    worker = threading.Thread(target=collect, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        spark.sparkContext.cancelAllJobs()
        worker.join(30)
        return Outcome("hang")
    return result[0]


def _stream(spark, source: str, store: str, options: dict[str, str], timeout: float) -> Outcome:
    name = f"campaign_{uuid.uuid4().hex[:8]}"
    checkpoint = tempfile.mkdtemp(prefix="rmqstore-campaign-ck-")
    query = (spark.readStream.format(source).options(**options).load(store).select("commitLogOffset")
             .writeStream.format("memory").queryName(name).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        if not query.awaitTermination(timeout):
            return Outcome("hang")
        return Outcome("rows", frozenset(r[0] for r in spark.table(name).collect()))
    except Exception as exc:  # StreamingQueryException
        return Outcome("error", error=str(exc)[:4000])
    finally:
        query.stop()
        spark.sql(f"DROP VIEW IF EXISTS {name}")
        shutil.rmtree(checkpoint, ignore_errors=True)


def judge(mutant: Damage, how: str, mode: str, outcomes: dict[str, Outcome], want: frozenset[int],
          last_record: int) -> list[str]:
    """The findings of one read of a mutant on both engines."""
    found = []
    jvm, python = outcomes["jvm"], outcomes["python"]
    if "unnamed" not in (jvm.kind, python.kind) and (jvm.kind != python.kind or jvm.rows != python.rows):
        found.append("disagreement")
    for outcome in (jvm, python):
        if outcome.kind in ("hang", "unnamed"):
            found.append(outcome.kind)
        at_tail = mutant.physical is not None and mutant.physical >= last_record
        if mode == "FAILFAST" and outcome.kind == "rows" and want - outcome.rows and not at_tail:
            found.append("silent skip")
        if outcome.rows - want:
            found.append("phantom")
    return found


def run_mutant(spark, sources: dict[str, str], mutant: Damage, store: str, want: dict[str, frozenset[int]],
               tally: Tally, timeout: float, reads: tuple[str, ...] = READS, number: int = -1) -> None:
    """Read `store` (holding `mutant`) every way on both engines; count outcomes and findings."""
    last_record = max(want["batch-scan"])
    for how in reads:
        for mode in MODES:
            outcomes = {engine: read(spark, source, how, mode, store, timeout)
                        for engine, source in sources.items()}
            tally.reads += len(outcomes)
            for engine, outcome in outcomes.items():
                short = outcome.kind == "rows" and bool(want[how] - outcome.rows)
                tally.outcomes[(how, mode, engine, outcome.kind + (" short" if short else ""))] += 1
            for finding in judge(mutant, how, mode, outcomes, want[how], last_record):
                tally.findings[finding] += 1
                tally.examples.append({
                    "mutant": number, "damage": mutant.what, "read": how, "mode": mode, "finding": finding,
                    **{engine: {"outcome": o.kind, "rows": len(o.rows), "missing": len(want[how] - o.rows),
                                "error": _excerpt(o.error, store)} for engine, o in outcomes.items()}})


def _excerpt(error: str, store: str) -> str:
    """The line of an error that names the store (Spark puts its own lines first), else its start."""
    return next((line for line in error.splitlines() if store in line), error)[:300]


def run(args) -> dict:
    """The `--spark` campaign: mutants until `--mutants` or `--minutes`, one Spark session."""
    from campaign import build_base, clone, files_of

    from rmqstore.spark import session
    from rmqstore.spark.jar import PROVIDER_CLASS

    os.environ.setdefault("RMQSTORE_CACHE_DIR", tempfile.mkdtemp(prefix="rmqstore-campaign-cache-"))
    spark = session("local[2]", "rmqstore-spark-campaign", engine="jvm", spark__ui__enabled="false",
                    spark__sql__shuffle__partitions="2", spark__python__worker__reuse="true",
                    spark__ui__showConsoleProgress="false")
    spark.sparkContext.setLogLevel("OFF")
    sources = {"jvm": PROVIDER_CLASS, "python": "rmqstore_python"}
    work = tempfile.mkdtemp(prefix="rmqstore-spark-campaign-")
    tally = Tally()
    started = time.monotonic()
    try:
        base = os.path.join(work, "base")
        build_base(base)
        want = truth(base)
        files = files_of(base)
        wanted = [int(i) for i in args.only.split(",")] if args.only else range(args.mutants)
        for number in wanted:
            if time.monotonic() - started > args.minutes * 60:
                break
            directory = os.path.join(work, f"m{number}")
            clone(base, directory)
            mutant = damage(random.Random(f"spark-{args.seed}-{number}"), directory, files)
            if mutant is not None:
                tally.mutants += 1
                run_mutant(spark, sources, mutant, directory, want, tally, args.timeout, number=number)
            shutil.rmtree(directory, ignore_errors=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    summary = {"mutants": tally.mutants, "reads": tally.reads, "seed": args.seed,
               "seconds": round(time.monotonic() - started), "findings": dict(tally.findings),
               "outcomes": [{"read": h, "mode": m, "engine": e, "outcome": o, "count": n}
                            for (h, m, e, o), n in sorted(tally.outcomes.items())],
               "examples": tally.examples}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "spark-summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    print_summary(summary)
    return summary


def print_summary(summary: dict) -> None:
    print(f"{'read':<14}{'mode':<11}{'engine':<8}outcomes")
    by_read: dict[tuple, list[str]] = collections.defaultdict(list)
    for row in summary["outcomes"]:
        by_read[(row["read"], row["mode"], row["engine"])].append(f"{row['outcome']} {row['count']}")
    for (how, mode, engine), counts in by_read.items():
        print(f"{how:<14}{mode:<11}{engine:<8}{', '.join(counts)}")
    findings = summary["findings"]
    print(f"\n{summary['mutants']} mutants, {summary['reads']} Spark reads in {summary['seconds']} s: "
          + ", ".join(f"{findings.get(k, 0)} {k}" for k in FINDINGS))
    seen = set()
    for example in summary["examples"]:
        key = (example["finding"], example["read"], example["mode"])
        if key not in seen:
            seen.add(key)
            engines = " ".join(f"{e} {example[e]['outcome']}/{example[e]['rows']}" for e in ("jvm", "python"))
            print(f"  #{example['mutant']:<4} {example['finding']:<13} {example['read']:<14} "
                  f"{example['mode']:<10} {example['damage'][:60]:<60} {engines}")
