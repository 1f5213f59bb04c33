"""``examples/local_llm.py``: where the local model server lives and why it cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def status_in(cache: Path, wheels: Path) -> str:
    env = {**os.environ, "LOCAL_LLM_CACHE": str(cache), "LLAMA_WHEEL_DIR": str(wheels)}
    code = "from examples import local_llm; print(local_llm.status()); print(local_llm.VENV)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_not_installed_without_a_wheel_says_what_a_source_build_costs(tmp_path: Path) -> None:
    """No server installed and no wheel: the skip reason names the command and the 15-35 minute source build."""
    said = status_in(tmp_path / "cache", tmp_path / "no-wheels")
    assert said.splitlines() == [
        f"the local model server is not installed in {tmp_path / 'cache' / 'venv'}; run `make demo-local` or "
        f"`python examples/local_llm.py install` (no wheel in {tmp_path / 'no-wheels'}: building "
        "llama-cpp-python from source takes 15-35 minutes)",
        str(tmp_path / "cache" / "venv"),
    ]


def test_the_cache_lives_outside_the_project_venv() -> None:
    """By default the server's virtualenv is ``.cache/local-llm/venv``, never inside ``.venv``."""
    env = {k: v for k, v in os.environ.items() if k != "LOCAL_LLM_CACHE"}
    code = "from examples import local_llm; print(local_llm.VENV)"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    venv = Path(done.stdout.strip())
    assert venv == REPO / ".cache" / "local-llm" / "venv"
    assert (REPO / ".venv") not in venv.parents
