"""`Store` is a facade: no service under python/rmqstore/store/ imports it back (docs/design.md §1)."""

from __future__ import annotations

import ast
from pathlib import Path

import rmqstore.store

STORE_DIR = Path(rmqstore.store.__file__).parent
FACADE_MODULE = "rmqstore.store.store"
ALLOWED = {"store.py", "__init__.py"}


def _names_facade(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name == FACADE_MODULE for alias in node.names)
    if not isinstance(node, ast.ImportFrom):
        return False
    if node.level:  # relative: `from .store import Store`, `from . import store`
        package = node.module in ("store", None)
    else:
        package = node.module == "rmqstore.store"
        if node.module == FACADE_MODULE:
            return True
    return package and any(alias.name in ("store", "Store") for alias in node.names)


def facade_imports(source: str) -> list[int]:
    """Lines of `source` importing the facade module or `Store` from it, at run time or for typing."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source)) if _names_facade(node))


def test_the_finder_sees_every_spelling() -> None:
    source = ("import rmqstore.store.store\nfrom rmqstore.store.store import Store\n"
              "from rmqstore.store import Store\nif TYPE_CHECKING:\n    from .store import Store\n"
              "from rmqstore.store.queues import Queues\nfrom rmqstore.store import errors\n")
    assert facade_imports(source) == [1, 2, 3, 5]


def test_no_service_imports_the_store() -> None:
    modules = sorted(p for p in STORE_DIR.glob("*.py") if p.name not in ALLOWED)
    assert len(modules) > 10 and STORE_DIR / "queues.py" in modules
    back = {p.name: lines for p in modules if (lines := facade_imports(p.read_text(encoding="utf-8")))}
    assert back == {}, f"modules importing the Store they serve: {back}"
