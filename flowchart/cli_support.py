"""What every pyfootprint command line shares: one-line errors, exit 2, never a traceback.

Law: a mistake (bad arguments, a missing file, an unknown run, any failure) prints ONE
line ``<prog>: error: <what>`` on stderr and exits 2; ``--help`` exits 0; a closed pipe
(``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn


class CliError(Exception):
    """A user-facing failure: printed as one ``<prog>: error: ...`` line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors become one-line ``CliError``s."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')")


def fail(prog: str, message: str) -> int:
    """Print ``<prog>: error: <message>`` (on one line) to stderr; return exit status 2."""
    print(f"{prog}: error: " + " ".join(message.split()), file=sys.stderr)
    return 2


def run_cli(prog: str, build_parser: Callable[[], argparse.ArgumentParser], argv: Sequence[str] | None) -> int:
    """Parse ``argv``, run the chosen handler, print what it returns; 0 ok, 2 error."""
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
        print(output)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (``| head``): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
