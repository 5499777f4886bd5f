"""Every cross-reference in the code resolves.

- `§N` / `§N.M` cites docs/format.md ("spec §2.12" too); "design §N" (or "docs/design.md §N") cites
  docs/design.md, "damage §N" (or "damage.md §N") docs/damage.md: each cited section is a heading of
  that document. No other document is cited by section ("facts §N" of files not in the repository is
  refused).
- A Scala docstring that points to the Python model (`python/rmqstore/x.py`, maybe followed by
  backticked names) names a file that exists and names defined in it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = {"format": ROOT / "docs" / "format.md", "design": ROOT / "docs" / "design.md",
        "damage": ROOT / "docs" / "damage.md"}
CITING_DIRS = ("python", "connector/src", "examples", "tests", "docs")
SUFFIXES = {".py", ".scala", ".java", ".md"}
SKIPPED_DIRS = {"fixtures", "target", "__pycache__", "jars", ".git"}
DOCUMENT_WORDS = {"design": "design", "design.md": "design", "damage": "damage", "damage.md": "damage",
                  "facts": "facts"}
"""The word before a citation that names its document (any other word, or none: docs/format.md)."""

# A run of citations ("§2.2-§2.12, §3.1", "§5.4-5.7", "§2.12/§6.3"), with the word before it.
_RUN = re.compile(
    r"(?:(?P<word>[A-Za-z]+(?:\.md)?)(?:\s+file)?\s+)?"
    r"(?P<refs>§\d+(?:\.\d+)?(?:\s*(?:,|-|–|/)\s*§?\d+(?:\.\d+)?)*)"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
_NAME = r"`[A-Za-z_][A-Za-z0-9_.]*`"
_POINTER = re.compile(
    rf"(?P<file>python/rmqstore/[A-Za-z0-9_/]+\.py)"
    rf"(?P<names>(?:\s*\*?\s*{_NAME}(?:\s*(?:/|,|and)\s*(?:\*\s*)?{_NAME})*)?)"
)


def _citing_files(suffixes: set[str] = SUFFIXES, tops: tuple[str, ...] = CITING_DIRS) -> list[Path]:
    files = []
    for top in tops:
        for path in sorted((ROOT / top).rglob("*")):
            parts = set(path.relative_to(ROOT).parts)
            if path.suffix in suffixes and path.is_file() and not parts & SKIPPED_DIRS:
                files.append(path)
    return files


def cited_sections(text: str) -> dict[str, set[str]]:
    """Document ("format", "design", "damage", "facts") -> the section numbers of it cited in `text`."""
    sections: dict[str, set[str]] = {"format": set(), "design": set(), "damage": set(), "facts": set()}
    for run in _RUN.finditer(text):
        word = (run.group("word") or "").lower()
        sections[DOCUMENT_WORDS.get(word, "format")].update(_NUMBER.findall(run.group("refs")))
    return sections


def doc_sections(document: str) -> list[str]:
    return _HEADING.findall(DOCS[document].read_text(encoding="utf-8"))


def test_citation_parser_tells_the_documents_apart() -> None:
    text = (
        "(spec §2.2-§2.12, §3.1) §5.4-5.7 §2.12/§6.3 design §2–§3, facts file §5, spec facts §4,"
        " (design §1, §5), §2.12 step 6, docs/design.md §8.2, docs/format.md §2.6, damage.md §2,"
        " (damage §1, §3)"
    )
    assert cited_sections(text) == {
        "format": {"2.2", "2.12", "3.1", "5.4", "5.7", "6.3", "2.6"},
        "design": {"2", "3", "1", "5", "8.2"},
        "damage": {"1", "2", "3"},
        "facts": {"5", "4"},
    }


def test_every_cited_section_is_a_heading_of_its_document() -> None:
    headings = {document: set(doc_sections(document)) for document in DOCS}
    missing: dict[str, list[str]] = {}
    cited_anywhere: dict[str, set[str]] = {document: set() for document in DOCS}
    facts: list[str] = []
    for path in _citing_files():
        if path.name == "test_docs.py":
            continue  # its parser test cites on purpose
        cited = cited_sections(path.read_text(encoding="utf-8", errors="replace"))
        if cited["facts"]:
            facts.append(str(path.relative_to(ROOT)))
        for document in DOCS:
            cited_anywhere[document] |= cited[document]
            for section in sorted(cited[document] - headings[document]):
                missing.setdefault(f"{document} §{section}", []).append(str(path.relative_to(ROOT)))
    assert {"2.2", "2.12", "4.1", "5.6"} <= cited_anywhere["format"], "the scan found the code's citations"
    assert {"3", "4.3", "8.2"} <= cited_anywhere["design"], "the scan found the design citations"
    assert {"1", "2", "3"} <= cited_anywhere["damage"], "the scan found the damage-rule citations"
    assert not missing, f"sections cited but missing from their document: {missing}"
    assert not facts, f"'facts §' cites a document that is not in the repository: {facts}"


def test_doc_sections_are_unique() -> None:
    for document in DOCS:
        sections = doc_sections(document)
        twice = sorted(s for s in sections if sections.count(s) > 1)
        assert not twice, (document, twice)


def _defines(source: str, name: str) -> bool:
    """`name` is a function, class, module constant, field or attribute of the Python source."""
    word = re.escape(name)
    pattern = rf"(?:def|class)\s+{word}\b|^\s*{word}\s*[:=]|self\.{word}\s*[:=]"
    return re.search(pattern, source, re.MULTILINE) is not None


def python_pointers(text: str) -> list[tuple[str, list[str]]]:
    """The Python files a Scala text points to, each with the names it cites there."""
    return [(m.group("file"), re.findall(r"`([^`]+)`", m.group("names") or ""))
            for m in _POINTER.finditer(text)]


def test_pointer_parser() -> None:
    text = ("like python/rmqstore/store/tail.py `CommitLogTail`, python/rmqstore/a.py `x` / `y.z` and\n"
            "  * python/rmqstore/b.py's words, python/rmqstore/c.py\n  * `Wrapped` here")
    assert python_pointers(text) == [("python/rmqstore/store/tail.py", ["CommitLogTail"]),
                                     ("python/rmqstore/a.py", ["x", "y.z"]),
                                     ("python/rmqstore/b.py", []),
                                     ("python/rmqstore/c.py", ["Wrapped"])]
    assert _defines("class A:\n    def run(self) -> None:\n        self.done = 1\nLIMIT = 3\n", "done")
    assert not _defines("x = run()\n", "run")


def test_every_scala_pointer_to_python_names_what_exists() -> None:
    stale: list[str] = []
    count = 0
    for path in _citing_files({".scala"}, ("connector/src",)):
        for file, names in python_pointers(path.read_text(encoding="utf-8")):
            count += 1
            target = ROOT / file
            where = f"{path.relative_to(ROOT)}: {file}"
            if not target.is_file():
                stale.append(f"{where} does not exist")
                continue
            source = target.read_text(encoding="utf-8")
            stale += [f"{where} has no `{name}`" for name in names
                      if not all(_defines(source, part) for part in name.split("."))]
    assert count >= 50, "the scan found the Scala docstrings' pointers to the Python model"
    assert not stale, stale
