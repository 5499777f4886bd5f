"""What a user meets outside a checkout (issue 21): `python -m rmqstore`."""

from __future__ import annotations

import os
import subprocess
import sys

from rmqstore import __version__


def test_python_m_rmqstore_runs_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "rmqstore", "--version"], capture_output=True, text=True,
                          timeout=120, env=os.environ)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"rmqstore {__version__}\n", "")
