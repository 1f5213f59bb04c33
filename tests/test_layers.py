"""The layer map of docs/architecture.md, enforced on every import the code can run.

Every ``import`` / ``from ... import`` of the three packages is read with ``ast`` —
module level and inside functions alike; only imports under ``if TYPE_CHECKING:`` are
left out (they never run). Importing ``a.b.c`` also runs the packages ``a.b`` (not the
façade ``flowchart`` itself, whose import every submodule pays anyway), so those count
as imported too.

- ``flowchart`` never imports ``agent`` or ``governance``; ``governance`` never imports
  ``agent``, and of ``flowchart`` only the values layers (L0/L1: JSON safety, fingerprints),
  never the engine, a chart or a store.
- Inside ``flowchart``, a module imports only from its own layer or below (``LAYERS``),
  and nothing imports the façade. Today's violations are listed by name in
  ``KNOWN_UPWARD`` — the debt, documented: a new one fails, and so does a listed one
  that is gone (then delete its line).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = ("flowchart", "agent", "governance")

# docs/architecture.md, "The layers of flowchart". A name ending in ".*" covers a package.
LAYERS: dict[str, int] = {
    # L1 the kernel: values, the transaction a stage sees, what it leaves, pause and checkpoints
    # (and the one converter and untrusted-input policy they load through)
    "flowchart._version": 1,
    "flowchart.events": 1,
    "flowchart._core.*": 1,
    # L2 structure: a chart, before anything runs
    "flowchart._chart.*": 2,
    # L3 the walk, and the record a run leaves (Record, RunResult, Trace and its file codec)
    "flowchart._engine.*": 3,
    "flowchart._record.*": 3,
    # L4 readers of records, tools, and the chart's entry points
    "flowchart.recorders.*": 4,
    "flowchart.store.*": 4,
    "flowchart.viewer.*": 4,
    "flowchart._stream.*": 4,
    "flowchart.cli": 4,
    "flowchart._cli_support": 4,
    "flowchart.testing": 4,
    "flowchart._pytest_plugin": 4,
    "flowchart.otel": 4,
    "flowchart._otel": 4,
    "flowchart.stream": 4,
    "flowchart.stream_events": 4,
    "flowchart._launch": 4,
    "flowchart._rerun": 4,
    "flowchart.lowlevel": 4,
    # L5 façade
    "flowchart": 5,
}

# (importer, imported): why it is there. Empty: the last function-level imports that hid a
# cycle went with issue 17 (chart → launch bound by the façade; summaries, fingerprint down).
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(inner) for inner in ast.walk(node))
    return hidden


def imports_of(path: Path, name: str | None = None) -> set[str]:
    """Every module of ours that running ``path`` (module ``name``) can import (parents included, façade excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    hidden = _type_checking_nodes(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [base] if node.module else [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[0] in OURS:  # the module and its parent packages, but not the top-level package
                found.update(".".join(parts[:i]) for i in range(min(2, len(parts)), len(parts) + 1))
    found.discard(name)
    return found


def modules(package: str) -> dict[str, Path]:
    return {module_name(p): p for p in sorted((REPO / package).rglob("*.py"))}


def _existing(name: str, known: dict[str, Path]) -> str | None:
    """``name`` if it is a module, else the module it is an attribute of (``from pkg import fn``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def layer_of(name: str) -> int | None:
    if name in LAYERS:
        return LAYERS[name]
    for pattern, layer in LAYERS.items():
        if pattern.endswith(".*") and (name == pattern[:-2] or name.startswith(pattern[:-1])):
            return layer
    return None


def upward_imports() -> dict[tuple[str, str], tuple[int, int]]:
    """(importer, imported) → (importer's layer, imported's layer), for every import that goes up."""
    known = modules("flowchart")
    found = {}
    for name, path in known.items():
        for target in imports_of(path):
            imported = _existing(target, known)
            if imported is None or not imported.startswith("flowchart"):
                continue
            below, above = layer_of(name), layer_of(imported)
            if below is not None and above is not None and above > below:
                found[(name, imported)] = (below, above)
    # a package counts on its own only when no deeper module of it is the upward import
    return {
        (name, imported): layers
        for (name, imported), layers in found.items()
        if not any(other.startswith(imported + ".") for (importer, other) in found if importer == name)
    }


def test_flowchart_imports_neither_agent_nor_governance() -> None:
    """The dependency law, on every import that can run: flowchart/ stands alone."""
    offenders = sorted(
        f"{name} imports {target}"
        for name, path in modules("flowchart").items()
        for target in imports_of(path)
        if target.split(".")[0] in ("agent", "governance")
    )
    assert offenders == []


def test_governance_never_imports_agent() -> None:
    """The dependency law, on every import that can run: governance/ knows no agent."""
    offenders = sorted(
        f"{name} imports {target}"
        for name, path in modules("governance").items()
        for target in imports_of(path)
        if target.split(".")[0] == "agent"
    )
    assert offenders == []


def test_governance_uses_only_flowchart_values_layers() -> None:
    """governance may reuse flowchart's L0/L1 values (JSON safety, canonical JSON), nothing above."""
    known = modules("flowchart")
    offenders = sorted(
        f"{name} imports {imported} (L{layer_of(imported)})"
        for name, path in modules("governance").items()
        for target in imports_of(path)
        if target.split(".")[0] == "flowchart" and (imported := _existing(target, known)) is not None
        if (layer_of(imported) or 0) > 1 or imported == "flowchart"
    )
    assert offenders == []


def test_every_flowchart_module_has_a_layer() -> None:
    """A new module is placed on the map (LAYERS here, the table in docs/architecture.md)."""
    assert [name for name in modules("flowchart") if layer_of(name) is None] == []


def test_no_flowchart_module_imports_a_higher_layer_beyond_the_known_debt() -> None:
    """Each module imports only its own layer or below, except the listed, explained exceptions."""
    new = {edge: layers for edge, layers in upward_imports().items() if edge not in KNOWN_UPWARD}
    assert new == {}, "move the code down, or (with a reason) add the edge to KNOWN_UPWARD"


def test_every_known_exception_still_exists() -> None:
    """The debt list stays true: an exception that was fixed is deleted from KNOWN_UPWARD."""
    assert sorted(set(KNOWN_UPWARD) - set(upward_imports())) == []


def test_nothing_inside_flowchart_imports_the_facade() -> None:
    """Submodules import each other, never ``flowchart/__init__.py`` (that would be a cycle through everything)."""
    offenders = sorted(
        name
        for name, path in modules("flowchart").items()
        if name != "flowchart" and "flowchart" in _direct_facade_imports(path)
    )
    assert offenders == []


def _direct_facade_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _type_checking_nodes(tree)
    package_depth = len(module_name(path).split(".")) - (0 if path.name == "__init__.py" else 1)
    found = set()
    for node in ast.walk(tree):
        if id(node) in hidden or not isinstance(node, ast.ImportFrom):
            continue
        if (node.level == 0 and node.module == "flowchart") or (node.level == package_depth and node.module is None):
            found.add("flowchart")
    return found


def test_the_import_reader_sees_lazy_relative_and_parent_imports(tmp_path: Path) -> None:
    """The reader counts function-level, relative and parent-package imports, and skips TYPE_CHECKING ones."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from flowchart._record.trace import Trace\n"
        "def run():\n    from ._engine.runner import start_run\n"
        "import governance\n"
    )
    path = tmp_path / "_layer_probe.py"
    path.write_text(source, encoding="utf-8")
    assert imports_of(path, "flowchart._layer_probe") == {"flowchart._engine", "flowchart._engine.runner", "governance"}


def test_the_architecture_page_names_only_modules_that_exist() -> None:
    """Every ``package/module.py`` the architecture page points to is a real file."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:flowchart|agent|governance)/[\w/]+\.py)`", text))
    assert named and sorted(p for p in named if not (REPO / p).is_file()) == []


def test_agent_imports_only_the_user_api_from_the_governance_facade() -> None:
    """governance's plumbing (chain runners, row builders, ...) is imported from its module, never the façade."""
    import governance

    public = set(governance.__all__)
    offenders = []
    for name, path in modules("agent").items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "governance" and node.level == 0:
                offenders += [f"{name}: {a.name}" for a in node.names if a.name not in public]
    assert offenders == []


def test_the_viewer_names_no_agent_state_key() -> None:
    """flowchart's viewer (Python, script and style) spells no key of the agent's state and no
    agent stage id: the agent's view comes in through a ``Panel`` (``agent/_edge/viewer_panel.py``)."""
    import agent._chart.state

    keys = {v for k, v in vars(agent._chart.state).items() if k.isupper() and isinstance(v, str)} | {"call-llm"}
    files = [p for p in sorted((REPO / "flowchart" / "viewer").rglob("*")) if p.suffix in (".py", ".js", ".css")]
    named = sorted(
        f"{path.relative_to(REPO)} names {key!r}"
        for path in files
        for key in keys
        if re.search(rf"[\"'.]{re.escape(key)}\b", path.read_text(encoding="utf-8"))
    )
    assert named == []


# The modules outside code may import (docs/api.md, "Low level"); the agent uses no other.
PUBLIC_FLOWCHART = (
    "flowchart",
    "flowchart.lowlevel",
    "flowchart.events",
    "flowchart.stream",
    "flowchart.stream_events",
    "flowchart.recorders.rendering",
    "flowchart.testing",
    "flowchart.otel",
    "flowchart.store",
    "flowchart.store.*",
    "flowchart.viewer",
)
# (module of flowchart): why the agent still imports it, not yet through flowchart.lowlevel.
AGENT_INTERNAL_DEBT = {
    "flowchart._cli_support": "the agent's CLI shares flowchart's CLI plumbing (CliError, run_cli)",
    "flowchart._stream.stream_tap": "the agent's stream taps the run's events as flowchart's stream does",
    "flowchart._stream": "the package of stream_tap (above)",
}


def _public(module: str) -> bool:
    return any(module == p or (p.endswith(".*") and module.startswith(p[:-1])) for p in PUBLIC_FLOWCHART)


def test_the_agent_imports_flowchart_only_through_public_modules() -> None:
    """The agent is a library on flowchart: it reaches internals through ``flowchart.lowlevel``,
    never ``flowchart._core.scope`` / ``.values`` / ``.engine`` and the like (listed debt excepted)."""
    known = modules("flowchart")
    used = {
        imported
        for path in modules("agent").values()
        for target in imports_of(path)
        if target.split(".")[0] == "flowchart" and (imported := _existing(target, known)) is not None
    }
    assert sorted(m for m in used if not _public(m) and m not in AGENT_INTERNAL_DEBT) == []
    assert sorted(m for m in AGENT_INTERNAL_DEBT if m not in used) == []


def test_no_import_cycles_outside_the_package_inits() -> None:
    """No module of flowchart, agent or governance reaches itself through imports, function-level
    ones counted: the one kind of cycle left is a package's ``__init__`` importing its submodules
    while they import a sibling (the package is their parent), which is no cycle of modules."""
    import networkx as nx

    graph = nx.DiGraph()
    packages = set()
    for package in OURS:
        for name, path in modules(package).items():
            if path.name == "__init__.py":
                packages.add(name)
            for imported in imports_of(path, name):
                graph.add_edge(name, imported)
    graph.remove_nodes_from(packages)
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    assert cycles == []


# docs/architecture.md, "The layers of agent". The folders are the layers: a module imports
# only its own layer or below (the public modules at the top re-export or run what is below).
AGENT_LAYERS: dict[str, int] = {
    # A0 values every layer may use: the error tree and the providers' wire
    "agent.errors": 0,
    "agent.providers.*": 0,
    # A1 tools as values
    "agent._tools.*": 1,
    # A1 long-term memory: stores of remembered text and the tools that reach them
    "agent.memory.*": 1,
    # A2 the chart: state keys, config, stages, gates, pauses, events
    "agent._chart.*": 2,
    "agent.events": 2,
    # A3 running it: Agent, builder, turns, conversations, durable runs, streams, the queue
    "agent._run.*": 3,
    # A4 the edge: readers of a record, the command line, workers, MCP, the viewer's panel
    "agent._edge.*": 4,
    "agent.viewer_panel": 4,
    "agent.cli": 4,
    "agent.celery": 4,
    "agent.replaying": 4,
    "agent.mcp.*": 4,
    "agent.serve.*": 4,
    # A5 the façade
    "agent": 5,
}


def agent_layer_of(name: str) -> int | None:
    for pattern, layer in AGENT_LAYERS.items():
        if name == pattern or (pattern.endswith(".*") and (name == pattern[:-2] or name.startswith(pattern[:-1]))):
            return layer
    return None


def test_every_agent_module_has_a_layer_folder() -> None:
    """Every module of agent/ sits in a layer (a folder, or one of the named public modules)."""
    assert [name for name in modules("agent") if agent_layer_of(name) is None] == []


def test_no_agent_module_imports_a_higher_layer() -> None:
    """Inside agent/, a module imports only its own layer or below: the chart's stages never
    import turn orchestration, tools never import the chart, and nothing imports the façade."""
    known = modules("agent")
    offenders = sorted(
        f"{name} (A{agent_layer_of(name)}) imports {imported} (A{agent_layer_of(imported)})"
        for name, path in known.items()
        for target in imports_of(path, name)
        if target.split(".")[0] == "agent" and (imported := _existing(target, known)) is not None
        if imported != name and not name.startswith(imported + ".")
        if (agent_layer_of(imported) or 0) > (agent_layer_of(name) or 0)
    )
    assert offenders == []
