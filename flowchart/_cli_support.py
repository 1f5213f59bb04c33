"""What every pyfootprint command line shares: one-line errors, exit 2, never a traceback.

Law: a mistake (bad arguments, a missing file, an unknown run, any failure) prints ONE
line ``<prog>: error: <what>`` on stderr and exits 2; ``--help`` exits 0; a closed pipe
(``| head``) ends quietly. Output is UTF-8 with replacement: text that is not Unicode
(a lone surrogate) prints as ``?`` — printing never raises, whatever the terminal.
A ``MODULE:ATTR`` option imports installed modules (and ``$PYTHONPATH``) only; the current
directory is searched only when asked, with ``--app-dir .``.
Nothing reaches the terminal raw: every byte a command writes (its output, its error line,
its warnings) goes through ``write``, which escapes control characters visibly
(``flowchart._core.printable``: ESC → ``\\x1b``), so an end user's text or a caller-chosen run id
cannot clear the screen, set the title or fake a line. A handler returns a ``str`` (its
newlines are the output's own) or a list of lines (each one line: a newline inside a line,
from a value, is written ``\\n``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from flowchart._core.printable import printable
from flowchart._version import package_version


class CliError(Exception):
    """A user-facing failure: printed as one ``<prog>: error: ...`` line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors become one-line ``CliError``s."""

    def add_version_option(self) -> None:
        """``--version`` prints ``<prog> <package version>`` and exits 0."""
        self.add_argument("--version", action=_VersionAction, help="print the version and exit")

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')")


class _VersionAction(argparse.Action):
    """``--version``: the version is read only when asked for (see ``flowchart._version``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> NoReturn:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def import_target(target: str, usage: str, app_dir: str | None = None) -> Any:
    """Import ``MODULE:ATTR`` (ATTR may be dotted). Only installed modules and ``$PYTHONPATH``
    are searched, unless ``app_dir`` names a directory to search first (``--app-dir .`` for the
    current one) — a file someone left in the working directory is never imported unasked.
    ``usage`` opens the message for a malformed target. Raises ``CliError``."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"{usage}, got '{target}'")
    if app_dir is not None:
        folder = os.path.abspath(app_dir)
        if not os.path.isdir(folder):
            raise CliError(f"--app-dir {app_dir}: no such directory")
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise CliError(
            f"cannot import '{module_name}': no module named '{exc.name}'{_cwd_hint(module_name, app_dir)}"
        ) from None
    except Exception as exc:
        raise CliError(f"importing '{module_name}' failed: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CliError(f"'{module_name}' has no attribute '{attr}'") from None
    return obj


def _cwd_hint(module_name: str, app_dir: str | None) -> str:
    """A hint when the module is in the current directory, which is searched only when asked."""
    top = module_name.split(".")[0]
    if app_dir is None and (os.path.exists(f"{top}.py") or os.path.isdir(top)):
        return " (the current directory is not searched: pass --app-dir . to import from it)"
    return ""


def add_app_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--app-dir DIR``: search DIR first for the modules MODULE:ATTR options name."""
    parser.add_argument(
        "--app-dir",
        metavar="DIR",
        help="import MODULE:ATTR targets from DIR first (e.g. --app-dir . for the current directory, "
        "which is not searched otherwise)",
    )


def load_target(target: str, kind: type, usage: str, app_dir: str | None = None) -> Any:
    """The ``kind`` instance ``MODULE:ATTR`` names: the object itself, or what calling it (a
    zero-argument factory) returns (``app_dir``: see ``import_target``). Raises ``CliError``
    naming what went wrong."""
    obj = import_target(target, usage, app_dir)
    if not isinstance(obj, kind) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise CliError(f"calling '{target}' failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(obj, kind):
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        raise CliError(
            f"'{target}' is a {type(obj).__name__}, not {article} {kind.__name__} (or a function returning one)"
        )
    return obj


def terminal_text(output: str | Sequence[str]) -> str:
    """What a command writes for ``output``: a ``str`` keeps its newlines, a list of lines is
    joined with newlines (each line kept on one line); control characters are escaped visibly."""
    if isinstance(output, str):
        return printable(output, newlines=True)
    return "\n".join(printable(str(line)) for line in output)


def write(output: str | Sequence[str], *, file: Any = None) -> None:
    """Print ``output`` (``terminal_text``) to ``file`` (stdout by default): the one writer."""
    print(terminal_text(output), file=sys.stdout if file is None else file)


def warn(prog: str, text: str) -> None:
    """Print ``<prog>: <text>`` on stderr, on one line."""
    write([f"{prog}: {text}"], file=sys.stderr)


def fail(prog: str, message: str) -> int:
    """Print ``<prog>: error: <message>`` (on one line) to stderr; return exit status 2."""
    write([f"{prog}: error: " + re.sub(r"[ \t\n]+", " ", message).strip()], file=sys.stderr)
    return 2


def _utf8_with_replacement() -> None:
    """Make stdout and stderr write UTF-8, replacing what cannot be encoded (never raising)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            try:
                reconfigure(encoding="utf-8", errors="replace")
            except (ValueError, OSError):  # a stream that cannot change: keep it as it is
                continue


def run_cli(prog: str, build_parser: Callable[[], argparse.ArgumentParser], argv: Sequence[str] | None) -> int:
    """Parse ``argv``, run the chosen handler, print what it returns; 0 ok, 2 error."""
    _utf8_with_replacement()
    try:
        args = build_parser().parse_args(argv)
        output = args.handler(args)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except CliError as exc:
        return fail(prog, str(exc))
    except KeyError as exc:  # lookup errors carry their message as the argument
        return fail(prog, str(exc.args[0]) if exc.args else repr(exc))
    except Exception as exc:  # the law: never a traceback
        return fail(prog, f"{type(exc).__name__}: {exc}")
    try:
        write(output)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
