"""The fixture the plugin's test files share: pytest in the plugin venv, on the files a test made with pytester."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Venv, our_variables


@pytest.fixture
def suite(venvs: Any, python: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``suite(*args, env=...)``: pytest in the plugin venv on the files this test made; pytester's RunResult."""
    for name in our_variables():
        monkeypatch.delenv(name, raising=False)
    venv: Venv = venvs(python, "pytest")

    def run(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> pytest.RunResult:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        return pytester.run(str(venv.python), "-m", "pytest", "-p", "no:cacheprovider", *args, timeout=timeout)

    return run
