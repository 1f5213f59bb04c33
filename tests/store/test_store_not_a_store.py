"""A run store opens run stores only: another application's database, an empty ``.json`` or
any other file is refused by name and left untouched; a new store is made only when asked.

The library (``SqliteStore(path, create=...)``) and the ``agent`` command (``--db PATH
[--create]``) apply the same rule; each test checks the refusal's words and that the file's
bytes did not change.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent.cli import main
from flowchart.store import SCHEMA_VERSION, NotARunStoreError, SqliteStore


@pytest.fixture
def other_app_db(tmp_path: Path) -> Path:
    """Another application's SQLite database: a ``users`` and an ``orders`` table."""
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        raw.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        raw.execute("INSERT INTO users VALUES (1, 'ada')")
    raw.close()
    return path


def _agent(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_another_applications_database_is_refused_and_left_untouched(other_app_db: Path) -> None:
    """``SqliteStore`` names the file and its tables, and writes nothing to it."""
    before = other_app_db.read_bytes()
    with pytest.raises(
        NotARunStoreError,
        match=rf"^{other_app_db} is not a run store: it is another application's SQLite database "
        r"\(tables: orders, users\); pyfootprint leaves it untouched",
    ):
        SqliteStore(other_app_db)
    assert other_app_db.read_bytes() == before
    assert not Path(f"{other_app_db}-wal").exists()


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    """A JSON file is not a run store, whatever ``create`` says."""
    path = tmp_path / "notes.json"
    path.write_text('{"a": 1}')
    with pytest.raises(NotARunStoreError, match=r"notes\.json is not a run store: it is not a SQLite database"):
        SqliteStore(path, create=True)
    assert path.read_text() == '{"a": 1}'


def test_an_absent_or_empty_path_becomes_a_store_only_with_create(tmp_path: Path) -> None:
    """``create=False`` refuses an absent path and an empty file; ``create=True`` (the library's
    default) makes a new store at either."""
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    with pytest.raises(NotARunStoreError, match=r"^no run store at .*new\.db: create a new one with SqliteStore"):
        SqliteStore(tmp_path / "new.db", create=False)
    with pytest.raises(NotARunStoreError, match=r"empty\.json is an empty file, not a run store"):
        SqliteStore(empty, create=False)
    assert not (tmp_path / "new.db").exists() and empty.read_bytes() == b""
    assert SqliteStore(tmp_path / "new.db").schema_version() == SCHEMA_VERSION
    assert SqliteStore(tmp_path / "new.db", create=False).schema_version() == SCHEMA_VERSION


def test_agent_runs_list_refuses_another_applications_database(
    other_app_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent runs list --db shop.db`` exits 2 with one line naming the file; no table is added."""
    before = other_app_db.read_bytes()
    code, out, err = _agent(capsys, "runs", "list", "--db", str(other_app_db))
    assert (code, out) == (2, "")
    assert err.startswith(f"agent: error: {other_app_db} is not a run store: it is another application's")
    assert other_app_db.read_bytes() == before


@pytest.mark.parametrize("command", [["runs", "list"], ["runs", "show", "r1"], ["conversations", "show", "c"]])
def test_every_store_command_refuses_an_empty_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """An empty ``.json`` given as ``--db`` is refused by every command that opens a store."""
    path = tmp_path / "out.json"
    path.write_bytes(b"")
    code, out, err = _agent(capsys, *command, "--db", str(path))
    assert (code, out) == (2, "")
    hint = "remove it, or pass --create to make a new store there"
    assert err == f"agent: error: {path} is an empty file, not a run store: {hint}\n"
    assert path.read_bytes() == b""


def test_create_makes_a_new_store_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``--create`` an absent path is refused (and not created); with it, a new store is made."""
    path = tmp_path / "fresh.db"
    code, out, err = _agent(capsys, "runs", "list", "--db", str(path))
    assert (code, out) == (2, "")
    assert "or --create to make a new, empty store there" in err and not path.exists()
    assert _agent(capsys, "runs", "list", "--db", str(path), "--create") == (0, "no runs\n", "")
    assert SqliteStore(path, create=False).list() == []
