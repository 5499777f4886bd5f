"""The store layer's shared thresholds and rmqstore's own cache files (docs/design.md §3.3, §8). GENERATED
by .ci/contract.py from docs/contract.toml: do not edit, edit the contract and run it."""

from __future__ import annotations

INDEX_TAIL_SCAN_LIMIT = 1073741824
"""Key lookups index at most this many bytes of log the broker's index lacks (besides ROLLBACK records:
past its end, lost index files) in the side index themselves; with more they refuse (scan instead)
(docs/design.md §3.3). Measured by tests/bench/test_bench_side_index.py."""
CACHE_IDENTITY_SEPARATOR = ", "
"""A cache file is named after the SHA-256 of its store's identity, a JSON list written with this item
separator (Python's `json.dumps` default, ASCII only) (docs/design.md §8.2)."""
COVERAGE_CACHE_KIND = "coverage"
"""Coverage verdicts per segment (docs/design.md §8.3)."""
COVERAGE_CACHE_VERSION = 4
SIDE_INDEX_CACHE_KIND = "side-index"
"""Side-index files and the ranges they cover (docs/design.md §8.3)."""
SIDE_INDEX_CACHE_VERSION = 1
LOGEND_CACHE_KIND = "logend"
"""Where walks for the valid end got to (Python; `-crc` appended when BODYCRC was checked) (docs/design.md
§8.3)."""
LOGEND_CACHE_VERSION = 2
TIMELINE_CACHE_KIND = "timeline"
"""Store-time runs per segment (docs/design.md §8.3)."""
TIMELINE_CACHE_VERSION = 2
CENSUS_CACHE_KIND = "census"
"""The JVM's tallies of every queue for aggregates answered from metadata (docs/design.md §8.3)."""
CENSUS_CACHE_VERSION = 1
