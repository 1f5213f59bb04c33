"""The public surface: every name ../shared/API.md promises is exported, by that exact name."""

from __future__ import annotations

import importlib

import pytest

CONTRACT = {
    "flowchart": (
        "flow_chart Pausable decide select narrative replay causal_chain Redaction FlowChart RunResult "
        "Commit Checkpoint Trace StageContext FlowchartError BuildError RunError CheckpointError"
    ),
    "agent": "Agent define_tool Paused ask_human tool explain_answer",
    "agent.providers": "scripted mock openai_compatible anthropic ollama",
    "agent.mcp": "mcp_tools mcp_server",
    "flowchart.otel": "otel_recorder",
    "governance": (
        "allow deny ask ToolMiddleware MessageMiddleware check_in_approved check_in_declined CheckInRequest "
        "CheckInDecision lexical_driver_scorer MessageDeniedError ResumeDecisionError DecisionRequiredError"
    ),
}


@pytest.mark.parametrize("module_name", sorted(CONTRACT))
def test_every_contract_name_is_exported_in_all(module_name: str) -> None:
    """Each contract name is importable from its module and listed in its ``__all__``."""
    module = importlib.import_module(module_name)
    names = CONTRACT[module_name].split()
    assert [n for n in names if not hasattr(module, n)] == []
    assert [n for n in names if n not in module.__all__] == []


@pytest.mark.parametrize("module_name", sorted(CONTRACT))
def test_all_lists_only_names_that_exist(module_name: str) -> None:
    """``__all__`` never promises a name the module does not define."""
    module = importlib.import_module(module_name)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


def test_flowchart_does_not_import_agent_or_governance() -> None:
    """The dependency law: flowchart/ never imports agent/ or governance/."""
    import pathlib

    root = pathlib.Path(importlib.import_module("flowchart").__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.lstrip().startswith(("import agent", "from agent", "import governance", "from governance"))
    ]
    assert offenders == []


def test_governance_does_not_import_agent() -> None:
    """The dependency law: governance/ never imports agent/."""
    import pathlib

    root = pathlib.Path(importlib.import_module("governance").__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.lstrip().startswith(("import agent", "from agent"))
    ]
    assert offenders == []
