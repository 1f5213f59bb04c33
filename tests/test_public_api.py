"""The public surface: each package's ``__all__`` is exactly what docs/api.md documents.

The documented list is docs/api.md's last section, "Every exported name": one
``### `module.__all__` `` heading per module, the names in backticks below it. The test
asserts equality (as httpx's ``test_exported_members`` does): a name exported without
being documented fails, and so does a documented name that is not exported. ``CONTRACT``
is the part of that list that code outside this repository calls by name; it may grow,
never shrink.
"""

from __future__ import annotations
import __future__

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"
MODULES = (
    "flowchart",
    "flowchart.lowlevel",
    "flowchart.otel",
    "agent",
    "agent.memory",
    "agent.providers",
    "agent.mcp",
    "governance",
)
CONTRACT = {
    "flowchart": (
        "flow_chart Pausable decide select narrative replay causal_chain Redaction FlowChart RunResult "
        "Commit Checkpoint Trace StageContext FlowchartError BuildError RunError CheckpointError"
    ),
    "agent": "Agent define_tool Paused ask_human tool explain_answer",
    "agent.memory": "SqliteMemory PostgresMemory InMemoryMemory",
    "agent.providers": "scripted mock openai_compatible anthropic ollama",
    "agent.mcp": "mcp_tools mcp_server",
    "flowchart.otel": "otel_recorder",
    "governance": (
        "allow deny ask ToolMiddleware MessageMiddleware check_in_approved check_in_declined CheckInRequest "
        "CheckInDecision lexical_driver_scorer MessageDeniedError ResumeDecisionError DecisionRequiredError"
    ),
}


def documented_names(text: str) -> dict[str, list[str]]:
    """``{module: names}`` from the page's ``### `module.__all__` `` sections (a name listed twice is kept twice)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"### `([\w.]+)\.__all__`", line.strip())
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif line.startswith("#"):
            current = None
        elif current is not None:
            current.extend(re.findall(r"`([A-Za-z_]\w*)`", line))
    return sections


DOCUMENTED = documented_names(API_PAGE.read_text(encoding="utf-8"))


def test_the_api_page_documents_each_module_once_per_name() -> None:
    """docs/api.md has a list for every public module, with no name twice."""
    assert sorted(DOCUMENTED) == sorted(MODULES)
    assert {m: sorted({n for n in names if names.count(n) > 1}) for m, names in DOCUMENTED.items()} == {
        m: [] for m in MODULES
    }


@pytest.mark.parametrize("module_name", MODULES)
def test_all_equals_the_documented_names(module_name: str) -> None:
    """``__all__`` is exactly the documented list: nothing undocumented is exported, nothing documented is missing."""
    module = importlib.import_module(module_name)
    assert sorted(module.__all__) == sorted(DOCUMENTED[module_name])


@pytest.mark.parametrize("module_name", MODULES)
def test_all_lists_only_names_that_exist(module_name: str) -> None:
    """``__all__`` never promises a name the module does not define."""
    module = importlib.import_module(module_name)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


@pytest.mark.parametrize("module_name", sorted(CONTRACT))
def test_every_contract_name_stays_documented(module_name: str) -> None:
    """The names outside code relies on are all on the documented list (and so exported)."""
    assert [n for n in CONTRACT[module_name].split() if n not in DOCUMENTED[module_name]] == []


def test_the_reader_takes_names_from_the_all_sections_only() -> None:
    """Backticked names count only under a ``### `m.__all__` `` heading, until the next heading."""
    page = "## API\n`ignored`\n### `pkg.__all__`\n`a`, `b_c`\nprose `D`\n### Other\n`e`\n"
    assert documented_names(page) == {"pkg": ["a", "b_c", "D"]}


def namespace_names(module: ModuleType) -> list[str]:
    """The public names a module's namespace holds, as httpx's ``test_exported_members`` reads
    them: every name not starting with ``_``, less its submodules and ``from __future__``'s
    ``annotations`` feature."""
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and not isinstance(value, ModuleType) and value is not __future__.annotations
    )


@pytest.mark.parametrize("module_name", MODULES)
def test_the_namespace_holds_exactly_the_documented_names(module_name: str) -> None:
    """``vars(module)`` holds nothing public beyond ``__all__``: a leaked helper, or a name kept
    importable for code written before a split, fails here (``governance`` re-exported 35)."""
    module = importlib.import_module(module_name)
    assert namespace_names(module) == sorted(n for n in module.__all__ if n != "__version__")
