"""``agent conversations show ID``: a stored conversation's transcript, turn by turn.

Law: the transcript is read from the turns' records alone (the commit log each turn's run
recorded, with its redaction already applied; the input shown under the rule stored with
the run), so it shows exactly what later turns loaded — and each message names the commit
of its run that wrote it. An unreadable turn is one ``agent: error:`` line, never a traceback.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent._chart.conversation_turns import Turn, transcript_lines, turn_from_record
from agent._chart.state import CONVERSATION_INPUT
from agent._edge.cli_common import open_store, shown_input
from agent.errors import ConversationError
from flowchart._cli_support import CliError


def turns_of(records: list[Any]) -> list[Turn]:
    """The turns of ``records`` (newest first, as the store lists them), oldest first."""
    try:
        return [turn_from_record(r) for r in reversed(records)]
    except ConversationError as exc:
        raise CliError(str(exc)) from None


def cmd_conversation_show(args: argparse.Namespace) -> str | list[str]:
    """``conversations show``: every turn's messages, oldest first."""

    records = open_store(args).list(conversation=args.conversation)
    if not records:
        raise CliError(f"no conversation '{args.conversation}' in the run store (no run is a turn of it)")
    shown = [_shown(r, shown_input(r)) for r in records]
    turns = turns_of(records)
    if args.json:
        out = [
            {
                "turn": t.turn,
                "run_id": t.run_id,
                "status": t.status,
                "messages": [{**m, "commit": idx} for m, idx in zip(t.messages, t.commits, strict=True)],
            }
            for t in turns
        ]
        return json.dumps({"conversation": args.conversation, "turns": out}, ensure_ascii=False, indent=2)
    head = f"conversation {args.conversation}: {len(turns)} turn(s)"
    return [head, *transcript_lines(turns, list(reversed(shown)))]


def _shown(record: Any, shown_input: dict[str, Any]) -> Any:
    """A stand-in for ``record`` whose input is what a reader may see."""
    return argparse.Namespace(turn=record.turn, input=shown_input)


def add_commands(groups: Any, store_options: Any) -> None:
    """Register ``conversations show`` on the ``agent`` parser."""
    text = "Show a stored conversation's transcript, turn by turn."
    group = groups.add_parser("conversations", help="show stored conversations", description=text)
    commands = group.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = commands.add_parser("show", help=text, description=text, parents=[store_options])
    show.set_defaults(handler=cmd_conversation_show)
    show.add_argument("conversation", metavar="ID", help="the conversation id")
    show.add_argument("--json", action="store_true", help="print JSON")


def turn_input(shown: dict[str, Any]) -> dict[str, Any]:
    """A conversation turn's input as ``runs show`` prints it: the loaded history counted, not repeated."""
    loaded = shown.get(CONVERSATION_INPUT)
    if not isinstance(loaded, dict):
        return shown
    if isinstance(loaded.get("history"), list):  # a turn stored before inputs named their turns
        count = len(loaded["history"])
    elif "history" not in loaded and type(loaded.get("messages")) is int:  # named by ``sources``
        count = loaded["messages"]
    else:
        return shown
    history = f"({count} messages: agent conversations show {loaded.get('id')})"
    return {**shown, CONVERSATION_INPUT: {**loaded, "history": history}}


def earlier_turn_lines(chain: Any, log: Any) -> list[str]:
    """Where a causal chain crosses into earlier conversation turns: when it reaches the seed
    that loaded them, one line per earlier run and the commits of it the loaded messages
    came from (``agent why RUN --keys`` on that run continues the chain there)."""
    from agent._chart.state import CONVERSATION
    from flowchart import replay

    seeds = [n for n in chain.nodes if n.stage_id == "seed"]
    if not seeds:
        return []
    meta = replay(list(log[: seeds[0].idx + 1])).get(CONVERSATION)
    sources = meta.get("sources") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(sources, list) or not sources:
        return []
    lines = [f"{seeds[0].label} loaded earlier turns of conversation '{meta.get('id')}':"]
    for source in sources:
        if isinstance(source, dict):
            commits = sorted({c for c in source.get("commits") or () if isinstance(c, int)})
            lines.append(
                f"  turn {source.get('turn')}: run {source.get('run_id')}, commits {', '.join(map(str, commits))}"
            )
    return lines
