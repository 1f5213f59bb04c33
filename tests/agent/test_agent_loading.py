"""``agent._run.loading.load_agent``: the one way to load an agent by ``MODULE:ATTR`` (CLI and Celery)."""

from __future__ import annotations

import ast
import itertools
import types
from pathlib import Path

import pytest

from agent import Agent, AgentError
from agent._run.loading import load_agent
from agent.celery import app_agent
from agent.errors import AgentLoadError
from flowchart._cli_support import CliError

REPO = Path(__file__).resolve().parents[2]
_names = itertools.count()

MODULE = """
from agent import Agent
from agent.providers import mock

built = Agent.create(provider=mock("hi"), model="m").build()

def factory():
    return Agent.create(provider=mock("made"), model="m").build()

def broken():
    raise RuntimeError("no config")

not_an_agent = 42
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh importable module (unique name) holding an agent, a factory and two wrong targets."""
    name = f"_loading_probe_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_built_agent_and_a_factory_both_load(module: str) -> None:
    """``MODULE:ATTR`` names a built agent, or a zero-argument function that returns one."""
    assert isinstance(load_agent(f"{module}:built"), Agent)
    made = load_agent(f"{module}:factory")
    assert isinstance(made, Agent) and made.run("x") == "made"


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ("not_an_agent", r":not_an_agent' is a int, not an Agent \(or a function returning one\)"),
        ("broken", r"calling '.*:broken' failed: RuntimeError: no config"),
        ("missing", r"has no attribute 'missing'"),
    ],
)
def test_a_wrong_target_is_an_agent_load_error_naming_it(module: str, attr: str, message: str) -> None:
    """A target that is not an agent raises ``AgentLoadError`` (an ``AgentError`` and a ``CliError``) saying why."""
    with pytest.raises(AgentLoadError, match=message) as caught:
        load_agent(f"{module}:{attr}")
    assert isinstance(caught.value, AgentError) and isinstance(caught.value, CliError)


def test_a_malformed_target_names_the_expected_form() -> None:
    """A target without ``:`` is refused with the form it should have."""
    with pytest.raises(AgentLoadError, match=r"expected MODULE:ATTR for --agent .* got 'nocolon'"):
        load_agent("nocolon")


def test_a_celery_worker_loads_through_the_same_function(module: str) -> None:
    """``agent.celery.app_agent`` loads with ``load_agent`` and reports a bad target as ``agent.celery: ...``."""
    good = types.SimpleNamespace(conf=types.SimpleNamespace(pyfootprint_agent=f"{module}:factory"))
    assert app_agent(good).run("x") == "made"
    bad = types.SimpleNamespace(conf=types.SimpleNamespace(pyfootprint_agent=f"{module}:not_an_agent"))
    with pytest.raises(RuntimeError, match=r"^agent\.celery: '.*:not_an_agent' is a int, not an Agent"):
        app_agent(bad)


def _imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_celery_does_not_import_the_command_line() -> None:
    """The worker side never imports ``agent.cli`` (loading lives in ``agent._run.loading``)."""
    imported = _imported_modules(REPO / "agent" / "celery.py")
    assert "agent._run.loading" in imported
    assert sorted(m for m in imported if m in (".cli", "agent.cli")) == []


AGENT_MODULES = sorted(
    str(path.relative_to(REPO / "agent")) for path in (REPO / "agent").rglob("*.py") if path.name != "agent.py"
)


@pytest.mark.parametrize("name", AGENT_MODULES)
def test_the_agent_modules_use_only_public_members_of_agent(name: str) -> None:
    """Nothing outside ``agent/_run/agent.py`` calls ``agent._something``: it uses the public hooks."""
    tree = ast.parse((REPO / "agent" / name).read_text(encoding="utf-8"))
    private = sorted(
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("agent", "served")
        and node.attr.startswith("_")
    )
    assert private == []
