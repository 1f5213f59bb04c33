"""Leases: the one worker advancing a run holds a lease on it, renewed by a heartbeat, fenced.

Laws:
- A lease is a row of the run store's ``leases`` table: the run, its holder, a fencing ``token``
  and when it expires. ``acquire`` takes a run that has no lease, or whose lease expired (a
  holder that stopped renewing: a dead worker), or that was handed over to the next worker
  (``hand_over``), or that the same holder holds; every take-over
  increments the token. Never two live leases on one run: ``acquire`` is one upsert statement
  that takes the row only when these laws let it (PostgreSQL locks the conflicting row, SQLite
  holds its write lock, for the statement), and ``hand_over`` one transaction under the row lock
  (PostgreSQL ``FOR UPDATE``, SQLite's write lock). ``acquire``, ``renew``, ``release`` and the sweep's
  reads (``expired``, ``stranded``) are one statement each, one round trip (``SqlStore._statement``).
- ``held(store, run_id, holder)`` holds a lease while its block runs: the process's heartbeat
  thread (one for every lease the process holds) renews it every ``ttl / 6`` seconds
  (``BEAT_PARTS``); it is released at the end. A renewal may be up to
  ``5 * ttl / 6`` late (1.0 s at the default ttl) before the lease lapses, and a dead holder's lease
  lapses between ``5 * ttl / 6`` and ``ttl`` after its death: the shorter the beat, the closer a
  take-over comes to the ttl, for the same slack. Inside the block the store's ``commit``
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
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs

from flowchart.store.protocol import CommitConflictError

__all__ = [
    "BEAT_PARTS",
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

DEFAULT_TTL = 1.2
"""Seconds a lease lives without a renewal: a dead worker's run is taken over within it."""

BEAT_PARTS = 6
"""The heartbeat renews a lease every ``ttl / BEAT_PARTS`` seconds (0.2 s at the default ttl).

Why 1.2 s and a sixth: the slack a busy worker's heartbeat has (how late a renewal may be before
the lease lapses) is ``ttl - ttl / BEAT_PARTS``, and how long a dead worker's run waits is at most
``ttl`` — 1.5 s and a third gave the same 1.0 s of slack with 0.3 s more wait (issue 33's recovery
≤ 2 s p95 after a SIGKILL, ``bench/effects_sigkill_celery.py``), for four more small renewals a
second per run in flight."""

HANDOVER = "handover:"
"""The holder prefix of a lease claimed for the next worker (``hand_over``): any worker takes it over."""

HANDOVER_TTL = 1.5
"""Seconds a handed-over run waits for a worker to take it before it is listed as expired again.

A little over ``DEFAULT_TTL``: a worker killed after receiving a handed-over run and before taking
its lease leaves the run to wait this long (3 s before: the slowest kills of issue 33's SIGKILL
loop); a run that only waits behind a busy worker is re-queued once more (the copy finds the run
taken and ends) and then waits twice as long at each handover nobody took."""

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
    holder's lease is live.

    One statement, its own transaction (``_TAKE``: an upsert that takes the row only when the laws
    let it, and returns the token), so a segment's lease costs one round trip to take and one to
    give up — not a transaction of four (issue 33: leases ≤ 5 % of Celery throughput)."""
    if not ttl > 0:
        raise ValueError(f"a lease's ttl must be above 0 seconds, got {ttl!r}")
    while True:
        now = time.time()
        taken = store._statement(_TAKE, (run_id, holder, now + ttl, now, now))
        if taken:
            return Lease(run_id, holder, int(taken[0][0]), ttl)
        found = store._statement("SELECT holder, expires_at FROM leases WHERE run_id = ?", (run_id,))
        if found:  # (a row that was given up or lapsed since the upsert: taken again above)
            owner, expires_at = str(found[0][0]), float(found[0][1])
            if owner != holder and expires_at > time.time() and not owner.startswith(HANDOVER):
                raise LeaseBusyError(
                    f"run '{run_id}' is leased to '{owner}' for {expires_at - now:.1f} s more: another worker "
                    "advances it"
                )


#: take the lease (see the laws): a run with no row gets token 1; a row held by ``holder``, expired,
#: or handed over is taken — the same token while its own lease is live, the next one otherwise;
#: a live lease of another holder is left as it is (no row returned)
_TAKE = (
    "INSERT INTO leases (run_id, holder, token, expires_at) VALUES (?, ?, 1, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET "
    "token = CASE WHEN leases.holder = excluded.holder AND leases.expires_at > ? "
    "THEN leases.token ELSE leases.token + 1 END, "
    "holder = excluded.holder, expires_at = excluded.expires_at "
    "WHERE leases.holder = excluded.holder OR leases.expires_at <= ? "
    f"OR substr(leases.holder, 1, {len(HANDOVER)}) = '{HANDOVER}' "
    "RETURNING token"
)


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
    return [str(row[0]) for row in store._statement(sql + " ORDER BY runs.updated_at", params)]


def renew(store: Any, lease: Lease) -> bool:
    """Extend ``lease`` by its ttl; False when it was taken over (then it is not renewed)."""
    done = store._statement(
        "UPDATE leases SET expires_at = ? WHERE run_id = ? AND holder = ? AND token = ?",
        (time.time() + lease.ttl, lease.run_id, lease.holder, lease.token),
    )
    return bool(done)


def release(store: Any, lease: Lease) -> None:
    """Give ``lease`` up (when it is still this holder's)."""
    store._statement(
        "DELETE FROM leases WHERE run_id = ? AND holder = ? AND token = ?", (lease.run_id, lease.holder, lease.token)
    )


def expired(store: Any, now: float | None = None) -> list[str]:
    """The ``running`` runs whose lease expired (their worker died or stalled), oldest first."""
    if not _sql(store):
        return []
    rows = store._statement(
        "SELECT leases.run_id FROM leases JOIN runs ON runs.run_id = leases.run_id "
        "WHERE runs.status = 'running' AND leases.expires_at <= ? ORDER BY leases.expires_at",
        (time.time() if now is None else now,),
    )
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


class _Heartbeat:
    """The process's one heartbeat: a thread that renews every lease ``held`` holds in this process,
    each every ``ttl / BEAT_PARTS`` seconds — started with the first lease (again in a forked child,
    where the parent's thread does not run). One thread for the process, not one per segment: a
    thread started and joined around every segment cost a worker ≈ 0.3 ms of CPU a segment
    (issue 33: leases ≤ 5 % of Celery throughput)."""

    def __init__(self) -> None:
        self._wake = threading.Condition(threading.Lock())
        #: per lease held: (store, lease, its ``lost`` event, when it was last renewed)
        self._held: dict[int, tuple[Any, Lease, threading.Event, float]] = {}
        self._pid = -1

    def forked(self) -> None:
        """In a forked child: no thread, no leases, a fresh lock (the parent's may have been held
        at the fork, and would be held forever in the child)."""
        self._wake = threading.Condition(threading.Lock())
        self._held, self._pid = {}, -1

    def add(self, store: Any, lease: Lease) -> threading.Event:
        """Renew ``lease`` from now on; the event is set when a renewal finds it taken over."""
        lost = threading.Event()
        with self._wake:
            if self._pid != os.getpid():  # this process's first lease (or a forked child's)
                self._held, self._pid = {}, os.getpid()
                threading.Thread(target=self._run, name="lease-heartbeat", daemon=True).start()
            self._held[id(lost)] = (store, lease, lost, time.monotonic())
            self._wake.notify()
        return lost

    def remove(self, lost: threading.Event) -> None:
        """Stop renewing the lease ``add`` gave ``lost`` for (a renewal under way may still land)."""
        with self._wake:
            self._held.pop(id(lost), None)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._held:
                    self._wake.wait()
                now = time.monotonic()
                due = []
                for key, (store, lease, lost, last) in self._held.items():
                    if now - last >= lease.ttl / BEAT_PARTS:
                        due.append((store, lease, lost))
                        self._held[key] = (store, lease, lost, now)  # tried now, whatever comes of it
                if not due:  # asleep until the next lease is due
                    soonest = min(row[3] + row[1].ttl / BEAT_PARTS for row in self._held.values())
                    self._wake.wait(soonest - now)
                    continue
            for store, lease, lost in due:
                try:
                    if not renew(store, lease):
                        lost.set()
                        self.remove(lost)
                except Exception:  # a failed renewal is retried at the next beat; expiry decides
                    continue


_HEARTBEAT = _Heartbeat()
# a child forked while the heartbeat held its lock would wait on that lock forever: it starts afresh
# (its parent's leases are the parent's; its own first lease starts its own thread)
os.register_at_fork(after_in_child=_HEARTBEAT.forked)


@contextlib.contextmanager
def held(store: Any, run_id: str, holder: str, ttl: float = DEFAULT_TTL) -> Iterator[Lease | None]:
    """Hold the lease on ``run_id`` while the block runs: renewed by a heartbeat, commits fenced."""
    if not _sql(store):
        yield None
        return
    lease = acquire(store, run_id, holder, ttl)
    lost = _HEARTBEAT.add(store, lease)
    token = _FENCE.set(lease)
    try:
        yield lease
    finally:
        _FENCE.reset(token)
        _HEARTBEAT.remove(lost)
        if not lost.is_set():
            with contextlib.suppress(Exception):
                release(store, lease)
