"""Docs are code: every example in README.md and docs/*.md runs as pasted.

Each page's ``python`` blocks run top to bottom in ONE namespace, fresh for every page, in
an empty temporary working directory (which is also on ``sys.path``, as it is for a
script run there). A block with the line ``<!-- fragment -->`` right before its opening
fence is an illustration and is skipped — exactly those, no others. A ``console`` block
is a shell session: each ``$ command`` runs (in the same directory, at its place in the
page, with this venv's commands on ``PATH``) and its output must equal the lines the
page claims. Tracebacks point at the page's own line numbers.

``make docs`` runs this file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_blocks import FRAGMENT, REPO, Block, blocks, commands, pages

RUNNABLE = ("python", "console")


def _runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page.read_text(encoding="utf-8")) if b.language in RUNNABLE and not b.fragment]


@pytest.fixture
def page_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working directory, first on ``sys.path``; modules imported from it are forgotten after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if str(tmp_path) in str(getattr(sys.modules[name], "__file__", None) or ""):
            del sys.modules[name]


def _run_python(page: Path, block: Block, module: types.ModuleType) -> None:
    # pad with blank lines so a traceback names the page and the page's own line number
    code = compile("\n" * (block.line - 1) + block.body, str(page), "exec")
    exec(code, module.__dict__)


def _run_console(page: Path, block: Block, cwd: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for command in commands(block):
        done = subprocess.run(
            command.command,
            shell=True,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
        where = f"{page.relative_to(REPO)}:{block.line}: $ {command.command}"
        assert done.stdout.splitlines() == command.claimed, f"{where} printed something else"


@pytest.mark.parametrize(
    "page", [p for p in pages() if _runnable(p)], ids=lambda p: str(p.relative_to(REPO)).replace("/", "-")
)
def test_every_example_of_the_page_runs_as_pasted(page: Path, page_dir: Path) -> None:
    """The page's python blocks run in order in one namespace; its console sessions print what they claim."""
    name = "docs_" + page.stem.replace("-", "_")
    module = types.ModuleType(name)
    module.__file__ = str(page_dir / f"{name}.py")
    sys.modules[name] = module  # so dataclasses, attrs and pickle can find classes the page defines
    try:
        for block in _runnable(page):
            if block.language == "python":
                _run_python(page, block, module)
            else:
                _run_console(page, block, page_dir)
    finally:
        del sys.modules[name]


def test_a_fragment_marker_skips_exactly_the_block_after_it() -> None:
    """Only a block whose fence directly follows ``<!-- fragment -->`` is a fragment."""
    text = (
        "<!-- fragment -->\n```python\nskipped()\n```\n\n"
        "<!-- fragment -->\n\n```python\nruns_marker_not_adjacent()\n```\n"
        "```python\nruns()\n```\n"
    )
    assert [(b.body, b.fragment, b.line) for b in blocks(text)] == [
        ("skipped()\n", True, 3),
        ("runs_marker_not_adjacent()\n", False, 9),
        ("runs()\n", False, 12),
    ]


def test_an_unclosed_fence_is_an_error() -> None:
    """A page whose fence never closes is refused, naming the line, instead of silently losing examples."""
    with pytest.raises(ValueError, match=r"^line 2: the ``` fence is never closed$"):
        blocks("text\n```python\nprint(1)\n")


def test_a_console_block_pairs_each_command_with_its_claimed_output() -> None:
    """Output lines belong to the ``$`` command above them."""
    (block,) = blocks("```console\n$ echo a\na\n$ true\n$ printf 'b\\nc\\n'\nb\nc\n```\n")
    assert [(c.command, c.claimed) for c in commands(block)] == [
        ("echo a", ["a"]),
        ("true", []),
        ("printf 'b\\nc\\n'", ["b", "c"]),
    ]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)).replace("/", "-"))
def test_no_page_claims_shell_output_that_goes_unchecked(page: Path) -> None:
    """A block showing ``$ command`` lines is a checked ``console`` session (or a marked fragment)."""
    unchecked = [
        b.line
        for b in blocks(page.read_text(encoding="utf-8"))
        if b.language not in ("console", "python")
        and not b.fragment
        and any(line.startswith("$ ") for line in b.body.splitlines())
    ]
    assert unchecked == []


def test_a_console_session_that_prints_something_else_fails(tmp_path: Path) -> None:
    """A claimed output that the command does not print fails the page, naming the page line and the command."""
    (block,) = blocks("```console\n$ echo actual\nclaimed\n```\n")
    with pytest.raises(AssertionError, match=r"^docs/page\.md:2: \$ echo actual printed something else"):
        _run_console(REPO / "docs" / "page.md", block, tmp_path)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_a_block_the_suite_skips_says_so_in_words(page: Path) -> None:
    """The ``<!-- fragment -->`` marker is invisible once the page is rendered, so the words just
    before a skipped block tell the reader it is shown, not run (issue 30's docs nit)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    unsaid = [
        n + 1
        for n, line in enumerate(lines)
        if line.strip() == FRAGMENT and "not run" not in " ".join(lines[max(0, n - 6) : n]).lower()
    ]
    assert unsaid == [], f"{page.name}: fragments at lines {unsaid} are not introduced as shown, not run"
