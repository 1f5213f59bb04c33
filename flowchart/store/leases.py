"""Leases: the one worker advancing a run holds a lease on it, renewed by a heartbeat, fenced.

Laws:
- A lease is a row of the run store's ``leases`` table: the run, its holder, a fencing ``token``
  and when it expires. ``acquire`` takes a run that has no lease, or whose lease expired (a
  holder that stopped renewing: a dead worker), or that was handed over to the next worker
  (``hand_over``), or that the same holder holds; every take-over
  increments the token. Never two live leases on one run: the row is written in one
  transaction, under the row lock (PostgreSQL ``FOR UPDATE``, SQLite's write lock).
- ``held(store, run_id, holder)`` holds a lease while its block runs: a heartbeat thread renews it
  every ``ttl / 3`` seconds; it is released at the end. Inside the block the store's ``commit``
  of that run is **fenced**: in the commit's own transaction the lease's token must still be the
  run's, else ``LeaseLostError`` (a ``CommitConflictError``) and nothing is written — a worker
  whose lease was taken over (it stalled past its expiry) cannot land a segment.
- ``expired(store)`` lists the runs that are ``running`` with a lease that expired: what another
  worker should pick up (``agent.celery.reclaim_expired``, which every live worker runs in the
  background) — seconds after a worker dies, not a broker's visibility timeout later.
- ``hand_over(store, run_id, by, ttl)`` claims a run whose lease expired (or that has none) for the
  worker that will advance it next, before it is re-queued: the claim is a lease like any other
  (the token moves on, so the dead or stalled holder stays fenced off), and two sweepers racing on
  one run cannot both claim it. Its holder is marked ``handover:``: the worker that receives the
  run takes a handover lease over at once (``acquire``), live or not; nobody renews one, so a
  handed-over run whose message is lost is listed by ``expired`` again — after ``ttl``, then
  twice as long at each handover nobody took (a run waiting behind a long queue is re-queued a
  logarithmic number of times, not once per ``ttl``; at most ``MAX_HANDOVER_TTL``).
- ``stranded(store, older_than)`` lists the ``running`` runs with no lease at all that have not
  moved for ``older_than`` seconds: queued for that long — or received by a worker that died
  before it took the lease. Handing them over too leaves no run to the broker's redelivery.
- The table (``leases``) is the store's, made by its numbered migrations (version 9). A store that is not SQL
  (``MemoryStore``: one process) takes no lease: ``held`` runs its block unfenced.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs

from flowchart.store.protocol import CommitConflictError

__all__ = [
    "DEFAULT_TTL",
    "HANDOVER",
    "HANDOVER_TTL",
    "MAX_HANDOVER_TTL",
    "Lease",
    "LeaseBusyError",
    "LeaseLostError",
    "acquire",
    "check_fence",
    "expired",
    "hand_over",
    "held",
    "release",
    "renew",
    "stranded",
]

DEFAULT_TTL = 1.5
"""Seconds a lease lives without a renewal: a dead worker's run is taken over within it."""

HANDOVER = "handover:"
"""The holder prefix of a lease claimed for the next worker (``hand_over``): any worker takes it over."""

HANDOVER_TTL = 3.0
"""Seconds a handed-over run waits for a worker to take it before it is listed as expired again."""

MAX_HANDOVER_TTL = 600.0
"""The longest wait of a handover nobody took (each one doubles it)."""

_FENCE: contextvars.ContextVar[Lease | None] = contextvars.ContextVar("flowchart_lease", default=None)


class LeaseLostError(CommitConflictError):
    """This worker's lease on the run was taken over by another: its commit is refused."""


class LeaseBusyError(CommitConflictError):
    """Another worker holds a live lease on the run."""


@attrs.frozen
class Lease:
    """A lease held: ``token`` fences its holder's commits."""

    run_id: str
    holder: str
    token: int
    ttl: float


def _sql(store: Any) -> bool:
    return hasattr(store, "_tx") and hasattr(store, "_run")


def _held_or_taken(store: Any, cur: Any, run_id: str, holder: str, expires_at: float) -> Any:
    """The lease row of ``run_id`` (locked for this transaction), or ``None`` after writing the first
    one — ``holder``'s, token 1, until ``expires_at`` — when the run had none."""
    row = store._run(
        cur, "SELECT holder, token, expires_at FROM leases WHERE run_id = ?" + store.for_update, (run_id,)
    ).fetchone()
    if row is None:
        store._run(
            cur,
            "INSERT INTO leases (run_id, holder, token, expires_at) VALUES (?, ?, ?, ?)",
            (run_id, holder, 1, expires_at),
        )
    return row


def acquire(store: Any, run_id: str, holder: str, ttl: float = DEFAULT_TTL) -> Lease:
    """Take the lease on ``run_id`` for ``holder`` (see the laws); ``LeaseBusyError`` when another
    holder's lease is live."""
    if not ttl > 0:
        raise ValueError(f"a lease's ttl must be above 0 seconds, got {ttl!r}")
    now = time.time()
    with store._tx() as cur:
        row = _held_or_taken(store, cur, run_id, holder, now + ttl)
        if row is None:
            return Lease(run_id, holder, 1, ttl)
        owner, token, expires_at = str(row[0]), int(row[1]), float(row[2])
        if owner != holder and expires_at > now and not owner.startswith(HANDOVER):
            raise LeaseBusyError(
                f"run '{run_id}' is leased to '{owner}' for {expires_at - now:.1f} s more: another worker advances it"
            )
        token = token if owner == holder and expires_at > now else token + 1
        store._run(
            cur,
            "UPDATE leases SET holder = ?, token = ?, expires_at = ? WHERE run_id = ?",
            (holder, token, now + ttl, run_id),
        )
        return Lease(run_id, holder, token, ttl)


def hand_over(store: Any, run_id: str, by: str, ttl: float = HANDOVER_TTL) -> Lease | None:
    """Claim ``run_id`` — whose lease expired, or that has none — for the next worker to advance it
    (see the laws); ``None`` when a live lease holds it (another sweeper claimed it first, or its
    worker is alive after all). A store that is not SQL has no leases: ``None``."""
    if not _sql(store):
        return None
    if not ttl > 0:
        raise ValueError(f"a handover's ttl must be above 0 seconds, got {ttl!r}")
    now = time.time()
    with store._tx() as cur:
        row = _held_or_taken(store, cur, run_id, f"{HANDOVER}0:{by}", now + ttl)
        if row is None:
            return Lease(run_id, f"{HANDOVER}0:{by}", 1, ttl)
        owner, token, expires_at = str(row[0]), int(row[1]), float(row[2])
        if expires_at > now:
            return None
        untaken = _handovers(owner) + 1 if owner.startswith(HANDOVER) else 0
        wait = min(ttl * 2**untaken, max(ttl, MAX_HANDOVER_TTL))
        holder = f"{HANDOVER}{untaken}:{by}"
        store._run(
            cur,
            "UPDATE leases SET holder = ?, token = ?, expires_at = ? WHERE run_id = ?",
            (holder, token + 1, now + wait, run_id),
        )
        return Lease(run_id, holder, token + 1, wait)


def _handovers(holder: str) -> int:
    """How many handovers before this one nobody took (``handover:N:by``)."""
    count = holder[len(HANDOVER) :].split(":", 1)[0]
    return min(int(count), 64) if count.isdigit() else 0


def stranded(
    store: Any, older_than: float = HANDOVER_TTL, now: float | None = None, *, among: list[str] | None = None
) -> list[str]:
    """The ``running`` runs with no lease that have not moved for ``older_than`` seconds (see the
    laws), oldest first; with ``among``, only those of these run ids."""
    if not _sql(store) or among == []:
        return []
    sql = (
        "SELECT runs.run_id FROM runs LEFT JOIN leases ON leases.run_id = runs.run_id "
        "WHERE runs.status = 'running' AND leases.run_id IS NULL AND runs.updated_at <= ?"
    )
    params: tuple[Any, ...] = ((time.time() if now is None else now) - older_than,)
    if among is not None:
        sql += " AND runs.run_id IN (" + ", ".join("?" for _ in among) + ")"
        params += tuple(among)
    with store._tx(write=False) as cur:
        rows = store._run(cur, sql + " ORDER BY runs.updated_at", params).fetchall()
    return [str(row[0]) for row in rows]


def renew(store: Any, lease: Lease) -> bool:
    """Extend ``lease`` by its ttl; False when it was taken over (then it is not renewed)."""
    with store._tx() as cur:
        done = store._run(
            cur,
            "UPDATE leases SET expires_at = ? WHERE run_id = ? AND holder = ? AND token = ?",
            (time.time() + lease.ttl, lease.run_id, lease.holder, lease.token),
        )
        return bool(done.rowcount)


def release(store: Any, lease: Lease) -> None:
    """Give ``lease`` up (when it is still this holder's)."""
    with store._tx() as cur:
        store._run(
            cur,
            "DELETE FROM leases WHERE run_id = ? AND holder = ? AND token = ?",
            (lease.run_id, lease.holder, lease.token),
        )


def expired(store: Any, now: float | None = None) -> list[str]:
    """The ``running`` runs whose lease expired (their worker died or stalled), oldest first."""
    if not _sql(store):
        return []
    with store._tx(write=False) as cur:
        rows = store._run(
            cur,
            "SELECT leases.run_id FROM leases JOIN runs ON runs.run_id = leases.run_id "
            "WHERE runs.status = 'running' AND leases.expires_at <= ? ORDER BY leases.expires_at",
            (time.time() if now is None else now,),
        ).fetchall()
    return [str(row[0]) for row in rows]


def check_fence(store: Any, cur: Any, run_id: str) -> None:
    """In ``store.commit``'s transaction: refuse the commit when this context holds a lease on
    ``run_id`` whose token is no longer the run's (``LeaseLostError``)."""
    lease = _FENCE.get()
    if lease is None or lease.run_id != run_id:
        return
    row = store._run(cur, "SELECT holder, token FROM leases WHERE run_id = ?", (run_id,)).fetchone()
    if row is None or str(row[0]) != lease.holder or int(row[1]) != lease.token:
        holder = "nobody" if row is None else f"'{row[0]}' (token {row[1]})"
        raise LeaseLostError(
            f"run '{run_id}': this worker's lease (token {lease.token}) was taken over by {holder}; "
            "its segment is not committed"
        )


@contextlib.contextmanager
def held(store: Any, run_id: str, holder: str, ttl: float = DEFAULT_TTL) -> Iterator[Lease | None]:
    """Hold the lease on ``run_id`` while the block runs: renewed by a heartbeat, commits fenced."""
    if not _sql(store):
        yield None
        return
    lease = acquire(store, run_id, holder, ttl)
    stop = threading.Event()
    lost = threading.Event()

    def beat() -> None:
        while not stop.wait(ttl / 3):
            try:
                if not renew(store, lease):
                    lost.set()
                    return
            except Exception:  # a failed renewal is retried at the next beat; expiry decides
                continue

    thread = threading.Thread(target=beat, name=f"lease-{run_id}", daemon=True)
    thread.start()
    token = _FENCE.set(lease)
    try:
        yield lease
    finally:
        _FENCE.reset(token)
        stop.set()
        thread.join()
        if not lost.is_set():
            with contextlib.suppress(Exception):
                release(store, lease)
