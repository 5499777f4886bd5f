"""The test vectors of docs/format.md §8 that both engines' tests read: tests/vectors/format_vectors.json
(ScalaTest reads the same file in FormatVectorsSuite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "vectors" / "format_vectors.json").read_text(encoding="utf-8"))
RECORD: dict[str, Any] = VECTORS["record"]
INDEX_FILE: dict[str, Any] = VECTORS["index_file"]
