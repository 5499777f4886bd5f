"""Corruption campaign: thousands of damaged or hostile stores, every operation in its own process.

Run by hand (not part of the default test run):

    python3 tests/hostile/campaign.py --mutants 5000 --workers 2 [--out DIR] [--seed N]
    python3 tests/hostile/campaign.py --spark --mutants 50 --minutes 8 [--seed N]

`--spark` reads commit-log and consume-queue mutants through Spark on both engines instead
(spark_campaign.py: engine disagreements, silent skips in FAILFAST, phantom rows, hangs).

A small demo store is written once; each mutant is a copy of it (hard links, the mutated file
copied) with one damage from `mutate`: commit log, consume queue, index, checkpoint, config JSON,
abort and layout (odd files, FIFOs, sockets, device links, symlink loops, huge names, truncations,
bit flips, garbage, zeroed regions); mutant N of a seed is always the same damage (`--only N`
makes it again). The `store` operation (the Store API) and one of the others in turn run on each
mutant (`--every-op`: all of them), each in a forked child of this process (rmqstore imported and
its kernels compiled once, so a child costs milliseconds) with a timeout, and ends as one of:

- named:   an rmqstore error (a `StoreError`) escaped: the user sees a message naming the problem;
- skipped: finished, PERMISSIVE skipped records or the store reported problems;
- clean:   finished without a word;
- bare:    any other exception (a traceback the user should never see);
- hang:    still running at the timeout (killed);
- crash:   died by a signal.

Hangs and crashes are run again in a fresh interpreter (`python3 -c ...`, no fork) to rule out an
artefact of forking. The summary table (kind x outcome) is printed and written with every bare
exception's traceback to `--out`. Bare exceptions whose traceback passes through the body
decoding code (compression, columnar decode, the commit-log read path) are counted apart.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

OUTCOMES = ("named", "skipped", "clean", "bare", "hang", "crash")
_EXIT = {"named": 3, "skipped": 4, "clean": 0, "bare": 5}
_BY_EXIT = {code: name for name, code in _EXIT.items()}
BODY_PATH_FILES = ("format/compression.py", "format/columnar.py", "format/record.py", "store/commitlog.py")
"""Bare exceptions raised in these files are counted apart (the commit-log body read path)."""


# ---- the base store ---------------------------------------------------------------------------

def build_base(directory: str) -> None:
    """A small demo store: 3 commit-log segments of 128 KiB, every kind of file."""
    from rmqstore.cli import main

    status = main(["demo", directory, "--size", "300KB", "--segment-size", "131072",
                   "--index-geometry", "500,2000", "--no-progress", "--seed", "7"])
    if status:
        raise SystemExit(f"demo store not written ({status})")


def files_of(base: str) -> dict[str, list[str]]:
    """Relative paths of the base store's files by kind."""
    kinds: dict[str, list[str]] = collections.defaultdict(list)
    for root, _, names in os.walk(base):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), base)
            top = rel.split(os.sep)[0]
            kind = {"commitlog": "commitlog", "consumequeue": "consumequeue", "index": "index",
                    "config": "config", "checkpoint": "checkpoint"}.get(top, "layout")
            kinds[kind].append(rel)
    return {k: sorted(v) for k, v in kinds.items()}


def clone(base: str, target: str) -> None:
    """`base` as hard links under `target` (never written: mutators replace the files they damage)."""
    for root, _dirs, names in os.walk(base):
        rel = os.path.relpath(root, base)
        os.makedirs(os.path.join(target, rel), exist_ok=True)
        for name in names:
            os.link(os.path.join(root, name), os.path.join(target, rel, name))


# ---- mutators -----------------------------------------------------------------------------------

@dataclass
class Mutant:
    kind: str
    what: str
    path: str


def _rewrite(path: str, change: Callable[[bytearray], bytes | bytearray]) -> None:
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    os.unlink(path)  # break the hard link
    with open(path, "wb") as fh:
        fh.write(change(data))


def _hot(rng: random.Random, data: bytearray) -> int:
    """A position inside the file's written bytes (consume queues and index files are mostly zeros)."""
    nonzero = np.flatnonzero(np.frombuffer(bytes(data), dtype=np.uint8))
    if len(nonzero) and rng.random() < 0.8:
        return int(nonzero[rng.randrange(len(nonzero))])
    return rng.randrange(max(1, len(data)))


def bit_flips(rng: random.Random, path: str) -> str:
    n = rng.choice((1, 1, 2, 4, 16))
    def change(data: bytearray) -> bytearray:
        for _ in range(n):
            if data:
                at = _hot(rng, data)
                data[at] ^= 1 << rng.randrange(8)
        return data
    _rewrite(path, change)
    return f"{n} bit flip(s)"


def _overwrite(rng: random.Random, path: str, lengths: tuple[int, ...],
               fill: Callable[[int, int], bytes]) -> int:
    """Overwrite a region of a chosen length at a written position with `fill(length, room left)`."""
    length = rng.choice(lengths)
    def change(data: bytearray) -> bytearray:
        at = _hot(rng, data) if data else 0
        data[at : at + length] = fill(length, len(data) - at)
        return data
    _rewrite(path, change)
    return length


def garbage(rng: random.Random, path: str) -> str:
    return f"{_overwrite(rng, path, (4, 20, 100, 4096), lambda n, _: rng.randbytes(n))} garbage bytes"


def zeroed(rng: random.Random, path: str) -> str:
    length = _overwrite(rng, path, (4, 20, 256, 8192), lambda n, room: bytes(min(n, max(0, room))))
    return f"{length} bytes zeroed"


def truncated(rng: random.Random, path: str) -> str:
    size = os.path.getsize(path)
    new = rng.choice((0, 1, 7, 19, 21, 39, rng.randrange(max(1, size)), max(0, size - 1)))
    new = min(new, size)
    _rewrite(path, lambda data: data[:new])
    return f"truncated to {new}"


def extended(rng: random.Random, path: str) -> str:
    extra = rng.choice((1, 13, 20, 4096))
    _rewrite(path, lambda data: data + rng.randbytes(extra))
    return f"{extra} garbage bytes appended"


def replaced_by_fifo(rng: random.Random, path: str) -> str:
    os.unlink(path)
    os.mkfifo(path)
    return "replaced by a FIFO"


def replaced_by_dir(rng: random.Random, path: str) -> str:
    os.unlink(path)
    os.mkdir(path)
    return "replaced by a directory"


def replaced_by_symlink_loop(rng: random.Random, path: str) -> str:
    shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
    os.symlink(os.path.basename(path), path)
    return "replaced by a symlink to itself"


def replaced_by_device(rng: random.Random, path: str) -> str:
    os.unlink(path)
    os.symlink(rng.choice(("/dev/zero", "/dev/null", "/dev/urandom")), path)
    return "replaced by a link to a device"


def replaced_by_socket(rng: random.Random, path: str) -> str:
    os.unlink(path)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(path)
    finally:
        sock.close()
    return "replaced by a socket"


def deleted(rng: random.Random, path: str) -> str:
    os.unlink(path)
    return "deleted"


def renamed_huge(rng: random.Random, path: str) -> str:
    new = rng.choice(("99999999999999999999", "18446744073709551615", "9" * 19 + "8", "00000000000000000020",
                      "-0000000000000000001", "0000000000000000000x"))
    os.rename(path, os.path.join(os.path.dirname(path), new))
    return f"renamed to {new}"


FILE_MUTATORS = (bit_flips, bit_flips, garbage, garbage, zeroed, truncated, truncated, extended,
                 replaced_by_fifo, replaced_by_dir, replaced_by_symlink_loop, replaced_by_device,
                 replaced_by_socket, deleted)


def _json_mutation(rng: random.Random, path: str) -> str:
    from rmqstore.format.brokerconfig import encode_fastjson, parse_fastjson

    with open(path, "rb") as fh:
        doc = parse_fastjson(fh.read().decode())
    choice = rng.randrange(7)
    if choice == 0:
        text = "[" * 100_000 + "]" * 100_000
        what = "100000 nested lists"
    elif choice == 1:
        text = '{"a":' * 5000 + "1" + "}" * 5000
        what = "5000 nested objects"
    elif choice == 2:
        text = encode_fastjson(_retype(rng, doc))
        what = "a value of the wrong type"
    elif choice == 3:
        text = encode_fastjson(doc)[: rng.randrange(1, len(encode_fastjson(doc)))]
        what = "cut JSON"
    elif choice == 4:
        text = rng.choice(("null", "[]", "42", '"x"', "{}", "true", "1e999", "NaN"))
        what = f"document {text}"
    elif choice == 5:
        raw = encode_fastjson(doc).encode()
        os.unlink(path)
        with open(path, "wb") as fh:
            fh.write(raw[:10] + b"\xff\xfe\x80" + raw[10:])
        return "invalid UTF-8"
    else:
        text = encode_fastjson(_retype(rng, doc)).replace("0", "9" * 400, 1)
        what = "a huge number"
    os.unlink(path)
    with open(path, "w") as fh:
        fh.write(text)
    return what


def _retype(rng: random.Random, doc: object) -> object:
    """`doc` with one value somewhere replaced by a value of another type."""
    if isinstance(doc, dict) and doc:
        key = rng.choice(list(doc))
        if rng.random() < 0.5 and isinstance(doc[key], (dict, list)):
            return {**doc, key: _retype(rng, doc[key])}
        return {**doc, key: rng.choice((None, [], "x", -1, 1.5, {"a": 1}, 2**70, True))}
    if isinstance(doc, list) and doc:
        i = rng.randrange(len(doc))
        return [*doc[:i], _retype(rng, doc[i]), *doc[i + 1 :]]
    return rng.choice((None, [], "x", -1, {"a": 1}))


def _checkpoint_mutation(rng: random.Random, path: str) -> str:
    field_at = rng.choice((0, 8, 16, 24))
    value = rng.choice((2**63 - 1, -(2**63), 2**62, -1, 253402300800000))
    def change(data: bytearray) -> bytearray:
        data[field_at : field_at + 8] = value.to_bytes(8, "big", signed=True)
        return data
    _rewrite(path, change)
    return f"field at {field_at} = {value}"


def _index_header_mutation(rng: random.Random, path: str) -> str:
    field_at = rng.choice((0, 8, 16, 24, 32, 36))
    width = 8 if field_at < 32 else 4
    top = 2 ** (8 * width - 1)
    value = rng.choice((top - 1, -top, -1, 0, 253402300800000 % top))
    def change(data: bytearray) -> bytearray:
        data[field_at : field_at + width] = value.to_bytes(width, "big", signed=True)
        return data
    _rewrite(path, change)
    return f"header field at {field_at} = {value}"


def _layout_mutation(rng: random.Random, store: str) -> tuple[str, str]:
    """Something odd added to the tree: (what, path)."""
    where = rng.choice(("", "commitlog", "consumequeue", "index", "config", "consumequeue/OrderEvents",
                        "consumequeue/OrderEvents/0"))
    directory = os.path.join(store, where)
    name = rng.choice(("99999999999999999999", "00000000000000000000", "x" * 255, "README", ".hidden",
                       "00000000000000001000", "2", "20240310080000000", "99999999999999999",
                       "-1", "4294967296", "NoSuchTopic", "..."))
    path = os.path.join(directory, name)
    if os.path.lexists(path):
        os.unlink(path) if not os.path.isdir(path) or os.path.islink(path) else shutil.rmtree(path)
    how = rng.randrange(7)
    if how == 0:
        os.mkfifo(path)
        what = "FIFO"
    elif how == 1:
        os.symlink(name, path)
        what = "symlink loop"
    elif how == 2:
        os.mkdir(path)
        what = "empty directory"
    elif how == 3:
        with open(path, "wb") as fh:
            fh.write(rng.randbytes(rng.choice((1, 20, 999, 4096))))
        what = "garbage file"
    elif how == 4:
        os.symlink(directory, path)
        what = "symlink to its own directory"
    elif how == 5:
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.bind(path)
        except OSError:
            path = os.path.join(directory, "s")
            sock.bind(path) if not os.path.lexists(path) else None
        finally:
            sock.close()
        what = "socket"
    else:
        os.symlink("/dev/zero", path)
        what = "link to /dev/zero"
    return f"{what} {where or '.'}/{name[:40]}", path


def mutate(rng: random.Random, store: str, files: dict[str, list[str]]) -> Mutant:
    """One damage to the store under `store`."""
    kind = rng.choice(("commitlog", "commitlog", "consumequeue", "consumequeue", "index", "index",
                       "checkpoint", "config", "config", "abort", "layout", "layout"))
    if kind == "abort":
        path = os.path.join(store, "abort")
        how = rng.randrange(4)
        if how == 0:
            open(path, "wb").close()
            return Mutant(kind, "abort file present", path)
        mutator = (replaced_by_dir, replaced_by_fifo, replaced_by_symlink_loop)[how - 1]
        return Mutant(kind, f"abort {mutator(rng, _touch(path))}", path)
    if kind == "layout":
        what, path = _layout_mutation(rng, store)
        return Mutant(kind, what, path)
    rel = rng.choice(files[kind])
    path = os.path.join(store, rel)
    if kind == "config" and rel.endswith(".json") and rng.random() < 0.6:
        return Mutant(kind, f"{rel}: {_json_mutation(rng, path)}", path)
    if kind == "checkpoint" and rng.random() < 0.4:
        return Mutant(kind, _checkpoint_mutation(rng, path), path)
    if kind == "index" and rng.random() < 0.3:
        return Mutant(kind, f"{rel}: {_index_header_mutation(rng, path)}", path)
    mutators = FILE_MUTATORS + ((renamed_huge,) * 2 if kind in ("commitlog", "consumequeue") else ())
    if kind in ("commitlog", "consumequeue", "index") and rng.random() < 0.08:
        directory = os.path.dirname(path)  # the directory itself
        what = rng.choice((replaced_by_symlink_loop, replaced_dir_by_file))(rng, directory)
        return Mutant(kind, f"{os.path.relpath(directory, store)}: {what}", directory)
    return Mutant(kind, f"{rel}: {rng.choice(mutators)(rng, path)}", path)


def replaced_dir_by_file(rng: random.Random, directory: str) -> str:
    shutil.rmtree(directory)
    with open(directory, "wb") as fh:
        fh.write(b"\0" * 20)
    return "directory replaced by a file"


def _touch(path: str) -> str:
    open(path, "wb").close()
    return path


# ---- operations -----------------------------------------------------------------------------

def op_store(store_dir: str) -> str:
    """Store.open, what `info` reads, then a FAILFAST and a PERMISSIVE scan."""
    from rmqstore.store import Store

    with Store.open(store_dir) as store:
        store.checkpoint  # noqa: B018
        store.consumer_offsets()
        for topic in store.topics():
            for queue_id in store.queue_ids(topic):
                cq = store.consume_queue(topic, queue_id)
                cq.units(cq.min_offset, cq.max_offset)
        store.index_files  # noqa: B018
        store.uncovered_ranges()
        skipped = 0
        for mode in ("FAILFAST", "PERMISSIVE"):
            for _ in store.scan(columns=["topic", "key", "body"], mode=mode, check_crc=True):
                pass
            skipped += store.stats.invalid_records_skipped
        return "skipped" if skipped or store.problems else "clean"


def _cli(*argv: str) -> str:
    from rmqstore.cli import build_parser

    args = build_parser().parse_args(list(argv))
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        args.func(args)
    return "clean"


def op_cli_info(store_dir: str) -> str:
    return _cli("info", store_dir, "--json")


def op_cli_dump(store_dir: str) -> str:
    return _cli("dump", store_dir, "--columns", "topic,key,body")


def op_cli_verify(store_dir: str) -> str:
    return _cli("verify", store_dir, "--json", "--no-progress")


def op_cli_query(store_dir: str) -> str:
    _cli("query", store_dir, "--key", "order-17", "--no-progress")
    return _cli("query", store_dir, "--topic", "OrderEvents", "--no-progress")


def op_plan(store_dir: str) -> str:
    """The Spark reader's path without Spark: plan a topic read and a key read, run every task."""
    from rmqstore.plan.confirm import confirm
    from rmqstore.plan.execute import ReadSettings, run_task
    from rmqstore.plan.planner import PlanSettings, plan_read
    from rmqstore.plan.predicates import Compare
    from rmqstore.store import Store

    skipped = 0
    with Store.open(store_dir) as store:
        for predicates in ([Compare("topic", "=", "OrderEvents")], [Compare("key", "=", "order-17")],
                           [Compare("tags", "=", "TagA")]):
            plan = plan_read([store], [predicates], PlanSettings())
            columns = ["topic", "key", "tags", "commitLogOffset"]
            for task in plan.tasks:
                for batch in run_task(task, store, columns, ReadSettings()):
                    confirm(batch, predicates)
        skipped += store.stats.invalid_records_skipped
    return "skipped" if skipped else "clean"


OPERATIONS: dict[str, Callable[[str], str]] = {
    "store": op_store, "info": op_cli_info, "dump": op_cli_dump, "verify": op_cli_verify,
    "query": op_cli_query, "plan": op_plan,
}


# ---- running ----------------------------------------------------------------------------------

def _child(op: str, store_dir: str, report: str) -> None:
    """Runs in the forked child: never returns."""
    code = _EXIT["bare"]
    try:
        quiet = os.open(os.devnull, os.O_WRONLY)  # notes and logs of the operations are not counted
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        try:
            code = _EXIT[OPERATIONS[op](store_dir)]
        except BaseException as exc:
            from rmqstore.store import StoreError

            named = isinstance(exc, StoreError)
            code = _EXIT["named" if named else "bare"]
            with open(report, "w") as fh:
                fh.write(f"{type(exc).__name__}: {exc}"[:2000] + "\n")
                if not named:
                    fh.write("".join(traceback.format_exception(exc))[-6000:])
    finally:
        os._exit(code)


@dataclass
class Running:
    pid: int
    started: float
    mutant: int
    op: str
    report: str


def fresh_outcome(op: str, store_dir: str, timeout: float) -> str:
    """The outcome of `op` in a new interpreter (no fork): confirms hangs and crashes."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); import campaign; "
            f"campaign._child({op!r}, {store_dir!r}, '/dev/null')")
    try:
        proc = subprocess.run([sys.executable, "-c", code], timeout=timeout, capture_output=True)
    except subprocess.TimeoutExpired:
        return "hang"
    if proc.returncode < 0:
        return "crash"
    return _BY_EXIT.get(proc.returncode, "bare")


def run_campaign(args: argparse.Namespace) -> dict:
    os.environ.setdefault("RMQSTORE_CACHE_DIR", tempfile.mkdtemp(prefix="rmqstore-campaign-cache-"))
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="rmqstore-campaign-")
    base = os.path.join(work, "base")
    build_base(base)
    for op in OPERATIONS.values():  # import and compile everything once, before forking
        op(base)
    files = files_of(base)
    wanted = [int(i) for i in args.only.split(",")] if args.only else list(range(args.mutants))
    ops = [o for o in OPERATIONS if o in args.ops.split(",")] if args.ops else list(OPERATIONS)
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    by_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    findings: list[dict] = []
    body_path: list[dict] = []
    mutants: dict[int, tuple[Mutant, str, int]] = {}  # id -> mutant, dir, ops left
    queue: list[tuple[int, str]] = []
    running: list[Running] = []
    next_id = 0
    started = time.monotonic()

    def finish(job: Running, outcome: str) -> None:
        mutant, directory, left = mutants[job.mutant]
        if outcome in ("hang", "crash"):
            outcome = fresh_outcome(job.op, directory, args.timeout)
        table[mutant.kind][outcome] += 1
        by_op[job.op][outcome] += 1
        if outcome in ("bare", "hang", "crash"):
            detail = ""
            with contextlib.suppress(FileNotFoundError), open(job.report) as fh:
                detail = fh.read()
            entry = {"mutant": job.mutant, "kind": mutant.kind, "mutation": mutant.what, "op": job.op,
                     "outcome": outcome, "detail": detail}
            (body_path if any(f in detail for f in BODY_PATH_FILES) and outcome == "bare"
             and not _outside_body_path(detail) else findings).append(entry)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(job.report)
        if left == 1:
            shutil.rmtree(directory, ignore_errors=True)
            del mutants[job.mutant]
        else:
            mutants[job.mutant] = (mutant, directory, left - 1)

    while next_id < len(wanted) or queue or running:
        while len(running) < args.workers and (queue or next_id < len(wanted)):
            if not queue:
                mutant_id = wanted[next_id]
                directory = os.path.join(work, f"m{mutant_id}")
                clone(base, directory)
                rng = random.Random(f"{args.seed}-{mutant_id}")  # a mutant can be made again alone
                mine = ops if args.every_op else _rotation(ops, mutant_id)
                mutants[mutant_id] = (mutate(rng, directory, files), directory, len(mine))
                queue.extend((mutant_id, op) for op in mine)
                next_id += 1
                if next_id % 100 == 0:
                    so_far = summarize(args, ops, started, next_id, table, by_op, findings, body_path)
                    write_summary(out, so_far)
            mutant_id, op = queue.pop(0)
            report = os.path.join(work, f"r{mutant_id}-{op}.txt")
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _child(op, mutants[mutant_id][1], report)
            running.append(Running(pid, time.monotonic(), mutant_id, op, report))
        time.sleep(0.002)
        for job in list(running):
            pid, status = os.waitpid(job.pid, os.WNOHANG)
            if pid:
                running.remove(job)
                if os.WIFSIGNALED(status):
                    finish(job, "crash")
                else:
                    finish(job, _BY_EXIT.get(os.WEXITSTATUS(status), "bare"))
            elif time.monotonic() - job.started > args.timeout:
                os.kill(job.pid, signal.SIGKILL)
                os.waitpid(job.pid, 0)
                running.remove(job)
                finish(job, "hang")
    shutil.rmtree(work, ignore_errors=True)
    summary = summarize(args, ops, started, len(wanted), table, by_op, findings, body_path)
    write_summary(out, summary)
    return summary


def _rotation(ops: list[str], mutant_id: int) -> list[str]:
    """The Store API operation and one of the others, in turn: mutant i runs `store` and op i mod n."""
    others = [op for op in ops if op != "store"]
    return (["store"] if "store" in ops else []) + ([others[mutant_id % len(others)]] if others else [])


def summarize(args: argparse.Namespace, ops: list[str], started: float, made: int, table: dict,
              by_op: dict, findings: list[dict], body_path: list[dict]) -> dict:
    return {"mutants": made, "seed": args.seed, "operations": ops,
            "seconds": round(time.monotonic() - started),
            "byKind": {k: dict(v) for k, v in sorted(table.items())},
            "byOperation": {k: dict(v) for k, v in sorted(by_op.items())},
            "findings": findings, "bodyPath": body_path}


def write_summary(out: str, summary: dict) -> None:
    with open(os.path.join(out, "summary.json.tmp"), "w") as fh:
        json.dump(summary, fh, indent=1)
    os.replace(os.path.join(out, "summary.json.tmp"), os.path.join(out, "summary.json"))


def _outside_body_path(detail: str) -> bool:
    """True when the innermost rmqstore frame of a traceback is outside the body read path."""
    frames = [line for line in detail.splitlines()
              if line.strip().startswith('File "') and "/rmqstore/" in line]
    return bool(frames) and not any(f in frames[-1] for f in BODY_PATH_FILES)


def print_table(summary: dict) -> None:
    rows = [(k, v) for k, v in summary["byKind"].items()]
    total: collections.Counter = collections.Counter()
    print(f"{'file kind':<14}" + "".join(f"{o:>9}" for o in OUTCOMES))
    for kind, counts in rows:
        total.update(counts)
        print(f"{kind:<14}" + "".join(f"{counts.get(o, 0):>9}" for o in OUTCOMES))
    print(f"{'total':<14}" + "".join(f"{total.get(o, 0):>9}" for o in OUTCOMES))
    print()
    print(f"{'operation':<14}" + "".join(f"{o:>9}" for o in OUTCOMES))
    for op, counts in summary["byOperation"].items():
        print(f"{op:<14}" + "".join(f"{counts.get(o, 0):>9}" for o in OUTCOMES))
    runs = sum(sum(counts.values()) for counts in summary["byOperation"].values())
    print(f"\n{summary['mutants']} mutants, {runs} operation runs in {summary['seconds']} s; "
          f"{len(summary['findings'])} bare/hang/crash outside the body read path, "
          f"{len(summary['bodyPath'])} bare in the body read path")
    seen = set()
    for entry in summary["findings"] + summary["bodyPath"]:
        first = entry["detail"].splitlines()[0] if entry["detail"] else ""
        key = (entry["outcome"], first[:60])
        if key not in seen:
            seen.add(key)
            print(f"  #{entry['mutant']:<5} {entry['outcome']:<5} {entry['op']:<7} "
                  f"{entry['mutation'][:60]:<60} {first[:100]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, help="seconds per operation (default 20, with --spark 120)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ops", help="comma-separated subset of: " + ",".join(OPERATIONS))
    parser.add_argument("--out", default="campaign-out")
    parser.add_argument("--every-op", action="store_true",
                        help="run every operation on every mutant (default: `store` and one other in turn)")
    parser.add_argument("--only", help="comma-separated mutant numbers to make and run again (same --seed)")
    parser.add_argument("--spark", action="store_true",
                        help="read commit-log and consume-queue mutants through Spark on both engines")
    parser.add_argument("--minutes", type=float, default=float("inf"),
                        help="with --spark: make no more mutants after this many minutes")
    args = parser.parse_args(argv)
    if args.spark:
        import spark_campaign

        args.timeout = args.timeout or 120.0
        findings = spark_campaign.run(args)["findings"]
        return 1 if any(findings.get(k) for k in ("disagreement", "silent skip", "hang")) else 0
    args.timeout = args.timeout or 20.0
    summary = run_campaign(args)
    print_table(summary)
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
