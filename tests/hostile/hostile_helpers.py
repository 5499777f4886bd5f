"""Helpers of the hostile-input tests: replacing a cloned store's file, and reading in a forked child with
a timeout (a hang or a crash fails the test, not the run)."""

from __future__ import annotations

import os
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from rmqstore.store import StoreError


def replace_file(path: Path, data: bytes) -> None:
    """Give `path` new bytes without touching the base store's file it is linked to."""
    path.unlink()
    path.write_bytes(data)


def isolated(read: Callable[[], object], timeout: float = 60.0) -> tuple[str, str]:
    """Run `read` in a forked child: ("ok", repr of the result) or ("named" | "bare", the exception),
    ("hang", "") after `timeout` seconds (killed) or ("crash", the signal)."""
    out, inp = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out)
        try:
            result = ("ok", repr(read()))
        except BaseException as exc:  # the child reports every exception to the parent
            kind = "named" if isinstance(exc, StoreError) else "bare"
            trace = "" if kind == "named" else traceback.format_exc()
            result = (kind, f"{type(exc).__name__}: {exc}\n{trace}")
        os.write(inp, "\0".join(result).encode()[: 1 << 15])
        os._exit(0)
    os.close(inp)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(out)
            return "hang", ""
        time.sleep(0.01)
    data = b""
    while chunk := os.read(out, 1 << 16):
        data += chunk
    os.close(out)
    if os.WIFSIGNALED(status):
        return "crash", signal.Signals(os.WTERMSIG(status)).name
    kind, _, detail = data.decode().partition("\0")
    return kind, detail
