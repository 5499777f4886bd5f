"""Fixtures of the CLI tests: the known store (written once per session) and an in-process runner."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cli_helpers import KnownStore, write_known_store

from rmqstore.cli import main


@pytest.fixture(scope="session")
def known_store(tmp_path_factory: pytest.TempPathFactory) -> KnownStore:
    return write_known_store(tmp_path_factory.mktemp("cli") / "store")


RunCli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run `rmqstore <args>` in-process; returns (exit status, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        status = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return status, out, err

    return run
