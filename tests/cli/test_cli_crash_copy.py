"""`info`, `verify`, `dump` and `query` on a crash copy that RocketMQ's abnormal recovery cuts short
(tests/helpers/crash_store.py): rows end at the recovered end, and the records after it are named."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.crash_store import lost_page_crash_copy


def test_crash_copy_reads_to_the_recovered_end_and_names_what_follows(tmp_path: Path, run_cli) -> None:
    lost = lost_page_crash_copy(tmp_path / "s")
    end = lost.damaged.physical_offset
    text = (f"3 records, {sum(r.store_size for r in lost.after)} bytes after the recovered end {end} "
            f"(the first at {lost.after[0].physical_offset}), which a restarted broker would overwrite")

    status, out, _ = run_cli("info", lost.root, "--json")
    doc = json.loads(out)
    assert status == 0 and doc["maxOffset"] == end
    assert doc["afterEnd"] == {"records": 3, "bytes": sum(r.store_size for r in lost.after),
                               "firstOffset": lost.after[0].physical_offset, "text": text}
    status, out, _ = run_cli("info", lost.root)
    assert status == 0 and f"after the end  {text}" in out

    status, out, _ = run_cli("verify", lost.root, "--json", "--no-progress")
    report = json.loads(out)
    assert status == 0 and report["sound"] and report["crashed"]
    assert report["warningExamples"]["commit log"][0] == text
    status, out, _ = run_cli("verify", lost.root, "--no-progress")
    assert status == 0 and text in out

    status, out, _ = run_cli("dump", lost.root, "--columns", "commitLogOffset", "--no-progress")
    assert status == 0
    assert [json.loads(line)["commitLogOffset"] for line in out.splitlines()] == [
        r.physical_offset for r in lost.kept]
    for option, value in (("--key", "k9"), ("--uniq-key", lost.after[1].uniq_key),
                          ("--msg-id", lost.after[2].msg_id)):
        status, out, _ = run_cli("query", lost.root, option, value)
        assert status == 0 and out.strip() == "", option

