"""Every section of docs/format.md that the code cites as `§N` or `§N.M` exists there, and every
section of docs/damage.md cited as `damage §N` or `damage.md §N` exists there.

A citation preceded by "design" or "facts" ("design §3", "facts file §5", "design §2–§3") points at the
design notes or the Spark facts, not at the format document, and is not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMAT_DOC = ROOT / "docs" / "format.md"
DAMAGE_DOC = ROOT / "docs" / "damage.md"
CITING_DIRS = ("python", "connector/src", "examples", "tests", "docs")
SUFFIXES = {".py", ".scala", ".java", ".md"}
SKIPPED_DIRS = {"fixtures", "target", "__pycache__", "jars", ".git"}
OTHER_DOCUMENTS = {"design", "facts", "damage"}

# A run of citations ("§2.2-§2.12, §3.1", "§5.4-5.7", "§2.12/§6.3"), with the word before it.
_RUN = re.compile(
    r"(?:(?P<word>[A-Za-z]+)(?:\.md)?(?:\s+file)?\s+)?"
    r"(?P<refs>§\d+(?:\.\d+)?(?:\s*(?:,|-|–|/)\s*§?\d+(?:\.\d+)?)*)"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)


def _citing_files() -> list[Path]:
    files = []
    for top in CITING_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            parts = set(path.relative_to(ROOT).parts)
            if path.suffix in SUFFIXES and path.is_file() and not parts & SKIPPED_DIRS:
                files.append(path)
    return files


def cited_sections(text: str, document: str | None = None) -> set[str]:
    """Section numbers cited in `text` of docs/format.md (`document` None: citations without another
    document's name before them) or of the named document ("damage")."""
    sections = set()
    for run in _RUN.finditer(text):
        word = run.group("word")
        named = word.lower() if word is not None and word.lower() in OTHER_DOCUMENTS else None
        if named == document:
            sections.update(_NUMBER.findall(run.group("refs")))
    return sections


def format_doc_sections() -> list[str]:
    return _HEADING.findall(FORMAT_DOC.read_text(encoding="utf-8"))


def damage_doc_sections() -> list[str]:
    return _HEADING.findall(DAMAGE_DOC.read_text(encoding="utf-8"))


def test_citation_parser_tells_the_documents_apart() -> None:
    text = (
        "(spec §2.2-§2.12, §3.1) §5.4-5.7 §2.12/§6.3 design §2–§3, facts file §5, spec facts §4,"
        " (design §1, §5), §2.12 step 6"
    )
    assert cited_sections(text) == {"2.2", "2.12", "3.1", "5.4", "5.7", "6.3"}
    damage = "damage.md §2, (damage §1, §3) format.md §2.6"
    assert cited_sections(damage, "damage") == {"1", "2", "3"}
    assert cited_sections(damage) == {"2.6"}


def test_every_cited_section_is_a_heading_of_the_format_doc() -> None:
    headings = set(format_doc_sections())
    missing: dict[str, list[str]] = {}
    cited_anywhere: set[str] = set()
    for path in _citing_files():
        cited = cited_sections(path.read_text(encoding="utf-8", errors="replace"))
        cited_anywhere |= cited
        for section in sorted(cited - headings):
            missing.setdefault(section, []).append(str(path.relative_to(ROOT)))
    assert {"2.2", "2.12", "4.1", "5.6"} <= cited_anywhere, "the scan found the code's citations"
    assert not missing, f"sections cited but missing from docs/format.md: {missing}"


def test_format_doc_sections_are_unique() -> None:
    sections = format_doc_sections()
    assert len(sections) == len(set(sections)), sorted(s for s in sections if sections.count(s) > 1)


def test_every_cited_damage_section_is_a_heading_of_the_damage_doc() -> None:
    headings = set(damage_doc_sections())
    missing: dict[str, list[str]] = {}
    cited_anywhere: set[str] = set()
    for path in _citing_files():
        cited = cited_sections(path.read_text(encoding="utf-8", errors="replace"), "damage")
        cited_anywhere |= cited
        for section in sorted(cited - headings):
            missing.setdefault(section, []).append(str(path.relative_to(ROOT)))
    assert {"1", "2", "3"} <= cited_anywhere, "the scan found the code's citations of damage.md"
    assert not missing, f"sections cited but missing from docs/damage.md: {missing}"
    assert len(headings) == len(damage_doc_sections())
