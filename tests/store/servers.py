"""Real servers for the store tests and benchmarks: PostgreSQL (and Redis) in a temp dir.

``postgres_server()`` runs ``initdb`` into a temporary folder and ``pg_ctl`` on a free
loopback port (as the ``postgres`` user when we are root, since initdb refuses root),
yields a DSN and removes everything afterwards. ``redis_server()`` does the same for
``redis-server``. Each raises ``ServerUnavailable`` with the reason when it cannot start.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path


class ServerUnavailable(RuntimeError):
    """The server cannot be started here (the message says why)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pg_bin() -> Path | None:
    """The newest Debian PostgreSQL bin directory, or the one ``pg_ctl`` is in on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    if found:
        return Path(found[-1])
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _as_service_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    if shutil.which("runuser") is None:
        raise ServerUnavailable("running as root without 'runuser': cannot start PostgreSQL as another user")
    return ["runuser", "-u", "postgres", "--", *argv]


@contextlib.contextmanager
def postgres_server(max_connections: int = 200) -> Iterator[str]:
    """Start a throwaway PostgreSQL; yield its DSN (user ``postgres``, database ``postgres``)."""
    bindir = pg_bin()
    if bindir is None:
        raise ServerUnavailable("PostgreSQL is not installed (apt-get install postgresql)")
    tmp = Path(tempfile.mkdtemp(prefix="pyfp-pg-"))
    if os.geteuid() == 0:
        shutil.chown(tmp, "postgres")
    data, port = tmp / "data", free_port()
    run = lambda *argv: subprocess.run(_as_service_user([*argv]), capture_output=True, text=True, timeout=120)  # noqa: E731
    try:
        done = run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        if done.returncode != 0:
            raise ServerUnavailable(f"initdb failed: {done.stderr.strip()[-400:]}")
        options = (
            f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
            f"-c full_page_writes=off -c max_connections={max_connections}"
        )
        start = run(
            str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(tmp / "log"), "-w", "-t", "60", "start"
        )
        if start.returncode != 0:
            log = (tmp / "log").read_text() if (tmp / "log").exists() else ""
            raise ServerUnavailable(f"pg_ctl start failed: {start.stderr.strip()} {log[-400:]}")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Start a throwaway ``redis-server`` (no persistence); yield its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServerUnavailable("redis-server is not installed (apt-get install redis-server)")
    tmp = Path(tempfile.mkdtemp(prefix="pyfp-redis-"))
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServerUnavailable(f"redis-server did not start on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def worker_argv(name: str, log: Path, *, app: str = "worker_app", concurrency: int = 1) -> list[str]:
    """The command of one ``celery -A app worker`` on the ``pyfootprint`` queue, logging to ``log``
    (no gossip, mingle or heartbeat: each worker alone, as in production with one queue)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "-n",
        f"{name}@%h",
        "--pool",
        "prefork",
        "--concurrency",
        str(concurrency),
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-Q",
        "pyfootprint",
        "-l",
        "INFO",
        "--logfile",
        str(log),
    ]


def start_worker(
    name: str, env: dict[str, str], logdir: Path, *, app: str = "worker_app", concurrency: int = 1
) -> subprocess.Popen[bytes]:
    """Start ``celery -A app worker`` in its own session (so it can be killed whole); wait until ready."""
    log = logdir / f"{name}.log"
    argv = worker_argv(name, log, app=app, concurrency=concurrency)
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=env.get("PYTHONPATH"),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180  # generous: a loaded 2-core machine starts celery slowly
    while not (log.exists() and " ready." in log.read_text(errors="replace")):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_worker(proc)
            raise ServerUnavailable(
                f"celery worker {name} did not start: {log.read_text()[-600:] if log.exists() else ''}"
            )
        time.sleep(0.1)
    return proc


def stop_worker(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """Stop a worker started by ``start_worker`` and its pool children (``sig`` to the whole session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


_schemas = itertools.count()


def fresh_pg_dsn(dsn: str) -> str:
    """A DSN whose connections use a new, empty schema."""
    import psycopg

    schema = f"t{next(_schemas)}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{dsn}?options={urllib.parse.quote(f'-csearch_path={schema}')}"
