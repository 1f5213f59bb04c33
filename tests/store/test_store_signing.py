"""Run stores made with ``key=`` sign the rows a run is started, resumed and recorded from.

A real SQLite file is edited behind the store's back with ``sqlite3`` (as anyone with the
file could): a changed checkpoint, answer, input or commit — or a row moved to another
run — fails to load with a ``CheckpointError``, and nothing runs.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from refund_agent import REFUNDS, refund_agent

from agent import Paused
from flowchart import CheckpointError
from flowchart._core.pause import CHECKPOINT_VERSION
from flowchart.store import SqliteStore
from governance import check_in_approved

KEY = b"s" * 32


@pytest.fixture(autouse=True)
def _clear_refunds() -> None:
    REFUNDS.clear()


def paused_run(path: Path) -> Paused:
    """A refund run paused on its check-in, in a signed store at ``path``."""
    out = refund_agent(SqliteStore(path, key=KEY)).run("refund order A-1 150")
    assert isinstance(out, Paused) and out.run_id and out.check_in
    return out


def edit(path: Path, sql: str, *params: object) -> None:
    """Change the database file directly."""
    with sqlite3.connect(path) as db:
        db.execute(sql, params)


def test_a_signed_store_runs_pauses_and_resumes_as_before(tmp_path: Path) -> None:
    """Signing changes nothing for its owner: the run pauses, resumes and finishes once."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    assert out.run_id is not None
    final = refund_agent(SqliteStore(path, key=KEY)).resume_run(
        out.run_id, check_in_approved(request=out.check_in, by="a")
    )
    assert final == "Done: refunded 150.00 on A-1" and len(REFUNDS) == 1
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT input FROM runs").fetchone()
    assert text.startswith('{"signed":{"input_message":') and '"signature":"hmac-sha256:' in text


def test_an_edited_checkpoint_row_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    """Raising the refund inside the stored checkpoint breaks its signature: the run cannot be loaded."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    edit(path, "UPDATE runs SET checkpoint = replace(checkpoint, '150', '9999')")
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid stored run '{out.run_id}' \(checkpoint\): the signature does not match @ \$\.signature",
    ):
        SqliteStore(path, key=KEY).get(str(out.run_id))
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid stored run '\w+' \(checkpoint\): the signature does not match "
        r"@ \$\.signature ",
    ):
        refund_agent(SqliteStore(path, key=KEY)).resume_run(
            str(out.run_id), check_in_approved(request=out.check_in, by="a")
        )
    assert REFUNDS == []


def test_a_row_copied_from_another_run_does_not_verify(tmp_path: Path) -> None:
    """Signatures bind the run id: run B's input pasted into run A's row is refused."""
    path = tmp_path / "runs.db"
    first, second = paused_run(path), paused_run(path)
    edit(
        path,
        "UPDATE runs SET input = (SELECT input FROM runs WHERE run_id = ?) WHERE run_id = ?",
        second.run_id,
        first.run_id,
    )
    with pytest.raises(
        CheckpointError, match=rf"^Invalid stored run '{first.run_id}' \(input\): the signature does not match"
    ):
        SqliteStore(path, key=KEY).get(str(first.run_id))


def test_an_edited_commit_row_is_refused(tmp_path: Path) -> None:
    """The record is signed too: an edited commit fails to load, naming its seq."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    edit(path, "UPDATE commits SET body = replace(body, 'refund', 'refunX') WHERE seq = 0")
    with pytest.raises(
        CheckpointError, match=rf"^Invalid stored run '{out.run_id}' \(commit 0\): the signature does not match"
    ):
        SqliteStore(path, key=KEY).get(str(out.run_id))


def test_signed_rows_need_the_key_and_a_key_needs_signed_rows(tmp_path: Path) -> None:
    """Opened without its key a signed store says so; a key on unsigned rows refuses them."""
    signed, plain = tmp_path / "signed.db", tmp_path / "plain.db"
    out = paused_run(signed)
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid stored run '{out.run_id}' \(commit 0\): the row is signed, but the store was opened "
        r"without a key; open it with the key it was written with \(e\.g\. SqliteStore\(path, key=\.\.\.\)\)$",
    ):
        SqliteStore(signed).get(str(out.run_id))
    unsigned = refund_agent(SqliteStore(plain)).run("refund order A-1 150")
    assert isinstance(unsigned, Paused)
    with pytest.raises(CheckpointError, match=rf"^Invalid stored run '{unsigned.run_id}' \(commit 0\): no signature"):
        SqliteStore(plain, key=KEY).get(str(unsigned.run_id))
    assert (
        json.loads(SqliteStore(plain).get(str(unsigned.run_id)).checkpoint.to_json())["version"] == CHECKPOINT_VERSION
    )  # type: ignore[union-attr]
