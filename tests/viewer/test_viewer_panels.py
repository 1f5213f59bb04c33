"""The viewer's panel hook: a ``Panel`` brings its data and its script; ``flowchart view --panel``
and ``agent view`` pass the agent's."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from viewer_harness import View, off_loop
from viewer_traces import loan_trace, support_traces

from agent.cli import main as agent_main
from agent.viewer_panel import PANEL
from flowchart import Trace
from flowchart.cli import main as flowchart_main
from flowchart.viewer import Panel, build_payload, installed_panels, load_panel, render_page

Open = Callable[..., View]

NOTE = Panel(
    name="note",
    build=lambda trace: {"commits": len(trace.commit_log), "text": "</script><b>x</b>"},
    script="(self.flowchartPanels = self.flowchartPanels || {}).note = (api, data) => "
    'api.side.append(api.section("Note", api.el("p", { class: "note" }, `${data.commits} commits ${data.text}`)));',
    title=lambda data: f"Noted run ({data['commits']})",
)
NEVER = Panel(name="never", build=lambda trace: None, script="/* never-included */")


def _payload(page: str) -> Any:
    found = re.search(r'<script type="application/json" id="payload">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_a_panel_adds_its_data_title_and_script_inside_the_one_hashed_script() -> None:
    """A panel's data lands under ``panels``, its title names the run, its script sits in the one
    script element the CSP allows by hash; a panel that builds ``None`` adds nothing."""
    page = render_page(loan_trace(), [NOTE, NEVER])
    data = _payload(page)
    assert data["panels"] == {"note": {"commits": 5, "text": "</script><b>x</b>"}}
    assert data["meta"]["title"] == "Noted run (5)"
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1 and scripts[0].startswith(NOTE.script) and "never-included" not in page
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in page


def test_a_panel_draws_through_the_viewer_api(browser: Any, tmp_path: Path) -> None:
    """In Chromium the panel's renderer runs once, draws text (never markup) into the side column."""
    path = tmp_path / "note.html"
    path.write_text(render_page(loan_trace(), [NOTE]), encoding="utf-8")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=10_000)
    assert page.locator("#panel-side p.note").all_text_contents() == ["5 commits </script><b>x</b>"]
    assert page.title().startswith("Noted run (5) · ")
    assert errors == []
    page.close()


def test_two_panels_of_one_name_are_refused() -> None:
    """Names key the payload: a second panel of the same name is an error saying so."""
    with pytest.raises(ValueError, match=r"^two viewer panels are named 'note': give each its own name$"):
        build_payload(loan_trace(), [NOTE, NOTE])


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("agent._edge.viewer_panel", r"expected MODULE:ATTR \(e\.g\. agent\.viewer_panel:PANEL\)"),
        ("no_such_module_x:PANEL", r"cannot load it \(No module named 'no_such_module_x'\)"),
        ("agent._edge.viewer_panel:build", r"is a function, not a flowchart\.viewer\.Panel"),
    ],
)
def test_a_panel_name_that_leads_nowhere_is_one_error_line(
    target: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``flowchart view --panel`` with a bad name: exit 2, one line saying what was wrong, no page."""
    trace_file = loan_trace().save(tmp_path / "loan.trace.json")
    assert flowchart_main(["view", str(trace_file), "--panel", target, "-o", str(tmp_path / "p.html")]) == 2
    assert re.match(rf"^flowchart: error: --panel '{re.escape(target)}': {message}\n$", capsys.readouterr().err)
    assert not (tmp_path / "p.html").exists()
    assert load_panel("agent.viewer_panel:PANEL") is PANEL


def test_flowchart_view_adds_the_installed_agent_panel_as_agent_view_does(tmp_path: Path) -> None:
    """``flowchart view T`` adds the installed panels (the agent's is registered under the
    ``flowchart.viewer_panels`` entry points), so it writes the same page as ``agent view T`` and
    ``flowchart view T --panel agent.viewer_panel:PANEL``; ``--no-panels`` embeds none."""
    _, resumed = off_loop(support_traces)
    trace_file = resumed.save(tmp_path / "support.trace.json")
    assert flowchart_main(["view", str(trace_file), "-o", str(tmp_path / "installed.html")]) == 0
    assert flowchart_main(["view", str(trace_file), "--no-panels", "-o", str(tmp_path / "plain.html")]) == 0
    assert (
        flowchart_main(["view", str(trace_file), "--panel", "agent.viewer_panel:PANEL", "-o", str(tmp_path / "f.html")])
        == 0
    )
    assert agent_main(["view", str(trace_file)]) == 0
    plain = _payload((tmp_path / "plain.html").read_text(encoding="utf-8"))
    installed = _payload((tmp_path / "installed.html").read_text(encoding="utf-8"))
    via_flowchart = _payload((tmp_path / "f.html").read_text(encoding="utf-8"))
    via_agent = _payload((tmp_path / "support.trace.html").read_text(encoding="utf-8"))
    assert plain["panels"] == {} and plain["meta"]["title"] == resumed.chart_spec["name"]
    assert via_agent == via_flowchart == installed
    assert via_agent["panels"]["agent"]["answer"] == resumed.final_state["final_content"]
    assert via_agent["meta"]["title"].startswith("Agent run: Hi, I was charged twice")


def test_an_installed_panel_that_does_not_load_is_named_in_one_warning_and_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A distribution on the path registers two broken panels (a missing module, a non-Panel): the
    page is still written, without them, and stderr names each once; a chart run gets no agent panel."""
    dist = tmp_path / "site" / "broken_panels-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-panels\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[flowchart.viewer_panels]\nghost = no_such_module_anywhere:PANEL\nwrong = json:dumps\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    trace_file = loan_trace().save(tmp_path / "loan.trace.json")
    assert flowchart_main(["view", str(trace_file), "-o", str(tmp_path / "p.html")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "flowchart view: viewer panel 'ghost' (no_such_module_anywhere:PANEL) was left out: "
        "cannot load it (No module named 'no_such_module_anywhere')",
        "flowchart view: viewer panel 'wrong' (json:dumps) was left out: it is a function, not a Panel",
    ]
    assert [p.name for p in installed_panels()] == ["agent"]
    assert _payload((tmp_path / "p.html").read_text(encoding="utf-8"))["panels"] == {}


def test_agent_view_reads_a_stored_run(
    stored_support: Trace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent view RUN --db PATH`` writes RUN.html from the store (the trace ``agent runs trace`` gives)."""
    db = next(Path(p) for p in map(str, tmp_path.parent.glob("stored-support*/runs.db")))
    out = tmp_path / "run.html"
    assert agent_main(["view", stored_support.run_id, "--db", str(db), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    data = _payload(out.read_text(encoding="utf-8"))
    assert data["panels"]["agent"]["decisions"][0]["by"] == "alice"
    assert list(data["subflows"]) == list(stored_support.subflows)
