"""``chart.to_mermaid()`` is valid mermaid for any stage id and name, by mermaid's own parser.

The npm package ``mermaid`` (11) parses the output under node. Nothing is installed at test
time: the package is looked for in ``$FLOWCHART_MERMAID_DIR`` or ``.cache/mermaid`` (where
``.ci/run`` puts it: ``npm install --prefix .cache/mermaid mermaid@11``); without node or the
package the parser tests skip and say so. Stage ids mermaid reserves (``end``, ``graph``,
``style``, ``class``, …) are escaped with a trailing ``_``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flowchart import FlowChart, flow_chart
from flowchart._chart.drawing import MERMAID_RESERVED

REPO = Path(__file__).resolve().parents[1]
MERMAID_DIR = Path(os.environ.get("FLOWCHART_MERMAID_DIR", REPO / ".cache" / "mermaid"))
SCRIPT = Path(__file__).with_name("mermaid_parse.mjs")


def mermaid_parse(texts: list[str]) -> list[str]:
    """Each text's verdict from the real parser: ``"ok"`` or its error (skips without node/mermaid)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the mermaid parser runs under node (apt-get install nodejs)")
    if not (MERMAID_DIR / "node_modules" / "mermaid" / "package.json").exists():
        pytest.skip(f"the npm package mermaid is not in {MERMAID_DIR}: npm install --prefix {MERMAID_DIR} mermaid@11")
    done = subprocess.run(
        [node, "--input-type=module", "-e", SCRIPT.read_text(encoding="utf-8")],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=MERMAID_DIR,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    verdicts: list[str] = json.loads(done.stdout)
    return verdicts


def _nothing(scope: Any) -> None:
    scope.done = True


def _pick(scope: Any) -> str:
    return "end"


def chart_with_ids(ids: list[str]) -> FlowChart:
    """A chain of plain stages (``ids``), a subflow mount, then a decider whose branches are the
    stages ``end`` and ``graph`` (the latter looping back to the first id)."""
    inner = flow_chart("Inner", _nothing, ids[0]).build()
    builder = flow_chart('Start "quoted"\nline', _nothing, "start")
    for stage_id in ids:
        builder = builder.add_function(f"Stage {stage_id}", _nothing, stage_id)
    return (
        builder.add_subflow_chart_next("sub-" + ids[0], inner, mount_name="Sub | mount")
        .add_decider_function("Pick", _pick, "pick")
        .add_function_branch("end", "End", _nothing)
        .add_function_branch("graph", "Graph", _nothing, loop_to=ids[0])
        .set_default("end")
        .end()
        .build()
    )


def test_every_reserved_id_draws_valid_mermaid() -> None:
    """A chart whose stage ids are every word mermaid reserves — as written, capitalised, and
    colliding after the id is made plain (``a-b`` / ``a_b``) — parses; so does each word alone."""
    words = sorted(MERMAID_RESERVED)
    ids = [*(w for w in words if w not in ("end", "graph")), "End", "linkStyle", "classDef", "a-b", "a_b", "ops", "ünï"]
    single = [flow_chart("One", _nothing, "first").add_function("End", _nothing, w).build() for w in words]
    texts = [chart_with_ids(ids).to_mermaid(), *(chart.to_mermaid() for chart in single)]
    assert mermaid_parse(texts) == ["ok"] * len(texts)


def test_the_unescaped_drawing_is_what_mermaid_refuses() -> None:
    """The check is real: the drawing pyfootprint used to make for a stage ``end`` fails to parse."""
    text = 'flowchart TD\n  first["One"]\n  end["End"]\n  first --> end'
    (verdict,) = mermaid_parse([text])
    assert "Parse error on line 3" in verdict and "got 'end'" in verdict


def test_reserved_and_colliding_ids_get_distinct_plain_ids() -> None:
    """``end`` draws as ``end_``; ``a-b`` and ``a_b`` stay two nodes; other ids are unchanged."""
    chart = (
        flow_chart("One", _nothing, "first")
        .add_function("End", _nothing, "end")
        .add_function("Dash", _nothing, "a-b")
        .add_function("Under", _nothing, "a_b")
        .build()
    )
    assert chart.to_mermaid() == "\n".join(
        [
            "flowchart TD",
            '  first["One"]',
            '  end_["End"]',
            '  a_b["Dash"]',
            '  a_b_2["Under"]',
            "  first --> end_",
            "  end_ --> a_b",
            "  a_b --> a_b_2",
        ]
    )
