"""Shared by the planner tests: a store's rows by brute force, and a plan run the way Spark runs it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, ReadPlan, plan_read
from rmqstore.plan.predicates import Predicate
from rmqstore.store import Store


def scan_rows(store_path: Path, columns: Sequence[str]) -> list[dict]:
    """Every record of the store as a dict of `columns`, by a full scan."""
    with Store.open(str(store_path)) as store:
        return [r for b in store.scan(columns=columns) for r in b.to_pylist()]


def run_plan(store_path: Path, predicates: list[Predicate], columns: Sequence[str],
             **settings: int) -> tuple[list[int], ReadPlan]:
    """Plan `predicates`, run every task and confirm its rows; the sorted commitLogOffsets found."""
    with Store.open(str(store_path)) as store:
        plan = plan_read([store], [predicates], PlanSettings(**settings))
        got = []
        for task in plan.tasks:
            for batch in run_task(task, store, columns, ReadSettings()):
                got.extend(confirm(batch, predicates).column("commitLogOffset").to_pylist())
    return sorted(got), plan
