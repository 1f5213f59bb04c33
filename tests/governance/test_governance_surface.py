"""The public surface: the contract's names are exported, and governance does not depend
on the agent (or the flowchart engine)."""

from __future__ import annotations

import ast
from pathlib import Path

import governance

CONTRACT = {
    "allow",
    "deny",
    "ask",
    "ToolMiddleware",
    "MessageMiddleware",
    "check_in_approved",
    "check_in_declined",
    "CheckInRequest",
    "CheckInDecision",
    "lexical_driver_scorer",
    "MessageDeniedError",
    "ResumeDecisionError",
    "DecisionRequiredError",
}
PACKAGE = Path(governance.__file__).parent


def test_every_contract_name_is_exported() -> None:
    """API.md's governance names are in ``__all__`` and importable."""
    assert set(governance.__all__) >= CONTRACT
    for name in CONTRACT:
        assert getattr(governance, name) is not None


def test_all_names_exist_and_are_unique() -> None:
    """Every name in ``__all__`` resolves, once."""
    assert len(governance.__all__) == len(set(governance.__all__))
    for name in governance.__all__:
        assert hasattr(governance, name), name


def test_every_public_name_has_a_docstring() -> None:
    """Classes and functions exported say what they are."""
    for name in governance.__all__:
        value = getattr(governance, name)
        if callable(value) and (isinstance(value, type) or hasattr(value, "__code__")):
            assert value.__doc__, name


def imported_roots(path: Path) -> set[str]:
    """The top-level package of every import in ``path``."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_governance_imports_no_agent() -> None:
    """Pure decisions: no agent import (which flowchart modules it may use: tests/test_layers.py)."""
    for path in PACKAGE.glob("*.py"):
        assert "agent" not in imported_roots(path), path.name


def test_every_module_is_small() -> None:
    """A file past 400 lines is asking to be split."""
    for path in PACKAGE.glob("*.py"):
        assert len(path.read_text().splitlines()) < 400, path.name
