"""How the narrative writes entries: a stage's operations as numbered steps, its headline.

The law (the narrative's, :mod:`flowchart.recorders.narrative`): a stage's reads, writes
and emits are told as depth-1 ``Step N:`` entries right after its ``Stage N:`` line, numbered
in the order they came (reads, writes and told emits share one count; a keyless read and a
left-out emit take no number), each value shown as it was at its operation; a noted key's
write is followed by its note. Told at once, or kept as a ``Batch`` worded when first read
(the default summaries), or handed to a live reader with its count first (``_countable``):
the words are the same every way.

This is the part of :class:`~flowchart.recorders.narrative.NarrativeRecorder` that writes
entries (a base class without state of its own: the recorder's fields are declared in
``narrative_state``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowchart._core.summary import summarize_value
from flowchart.events import TraversalContext
from flowchart.recorders import sentences
from flowchart.recorders.narrative_lines import Batch, Followed, Line, Told, stage_sentence, summary_of
from flowchart.recorders.narrative_lines import Entry as _Entry
from flowchart.recorders.narrative_state import NarrativeState
from flowchart.recorders.rendering import OpRenderContext, StageRenderContext


class StepTelling(NarrativeState):
    """The narrative recorder's entry writing: steps, notes, headlines, lazy lines."""

    if not TYPE_CHECKING:  # the state is the recorder's (``narrative_state``)
        __slots__ = ()

    @property
    def _summarizes(self) -> bool:
        """True when a summary is all this narrative prints of a value (the default options).

        Only then is a batch kept untold until read: it holds summaries and values the
        commits share. Otherwise it is told at its headline, so no value outlives its stage.
        """
        return self._render_op is None and self.format_value is summarize_value

    def _buffer_batch(self, rid: str, batch: list[Any]) -> None:
        ops = self._pending[rid]
        append = ops.append
        step = ops[-1][3] if ops else 0
        fmt, max_len = self.format_value, self.max_value_length
        keep_raw = self._render_op is not None
        for kind, key, value, operation, _hidden in batch:
            if kind == "read" or kind == "missing":
                if key:
                    step += 1
                    summary = "undefined" if kind == "missing" else summary_of(fmt, value, max_len)
                    append(("read", key, summary, step, "set", value if keep_raw else None))
            elif kind == "write":
                step += 1
                append(("write", key, summary_of(fmt, value, max_len), step, operation, value if keep_raw else None))
                tell = self.notes.get(key) if self.notes else None
                if tell is not None and operation != "delete":
                    self._note(rid, key, tell, value)
                    step = ops[-1][3]
            elif kind == "emit" and self._tells_emits:
                step += 1
                append(("emit", key, fmt(value, max_len), step, "set", value if keep_raw else None))

    def _countable(self, batch: list[Any]) -> int | None:
        """How many entries ``_tell_batch`` makes of ``batch`` (default summaries), or ``None``
        when that is only known by wording it (a noted key is written: its teller decides)."""
        # one operation at a time: for the few operations a stage makes (two to ten in W1 and
        # W6) this loop costs fewer instructions, and less time, than counting the kinds in C
        # with ``map``/``list.count`` (docs/performance.md, "Round six")
        notes, emits = self.notes, self._tells_emits
        count = 0
        for kind, key, _value, operation, _hidden in batch:
            if kind == "write":
                if notes and key in notes and operation != "delete":
                    return None
                count += 1
            elif kind == "read" or kind == "missing":
                if key:
                    count += 1
            elif kind == "emit" and emits:
                count += 1
        return count

    def _tell_batch(
        self, ctx: TraversalContext, stage_name: str, batch: list[Any], push: Callable[[_Entry], Any]
    ) -> None:
        """Tell one stage's batch as its depth-1 entries, exactly as ``_flush`` tells live operations."""
        fmt, max_len = self.format_value, self.max_value_length
        numbered, values = self.include_step_numbers, self.include_values
        describe = sentences.operation
        render = self._render_op
        notes = self.notes
        step = 0
        for kind, key, value, operation, _hidden in batch:
            if kind == "write":
                step += 1
                summary = value.text if type(value) is Told else fmt(value, max_len)
            elif kind == "read":
                if not key:
                    continue
                step += 1
                summary = value.text if type(value) is Told else fmt(value, max_len)
                operation = "set"
            elif kind == "missing":
                if not key:
                    continue
                step += 1
                kind, summary, operation, value = "read", "undefined", "set", None
            elif kind == "emit":
                if not self._tells_emits:
                    continue
                step += 1
                push(("emit", 1, f"[emit] {key}: {fmt(value, max_len)}", stage_name, ctx, None, step))
                continue
            else:
                continue
            told = True
            if render is not None:
                custom = render(OpRenderContext(kind, key, value, summary, operation, step))
                if custom == "":
                    told = False  # the renderer leaves this step out
                elif custom is not None:
                    push(("step", 1, custom, stage_name, ctx, key, step))
                    told = False
            if told:
                text = describe(kind, operation, key, summary, values, step if numbered else None)
                push(("step", 1, text, stage_name, ctx, key, step))
            if notes and kind == "write" and operation != "delete":  # no notes: one test
                tell = notes.get(key)
                if tell is not None:
                    try:
                        note = tell(value)
                    except Exception:
                        continue
                    if isinstance(note, str) and note:
                        push(("note", 1, note, stage_name, ctx, key, None))

    def _buffer(
        self,
        runtime_stage_id: str,
        kind: str,
        key: str,
        value: Any,
        operation: str = "set",
        summary: str | None = None,
    ) -> None:
        # summarised now, not at flush: a value read from the scope may be a live view
        # that the stage goes on to mutate, and the step must show it as it was read
        if summary is None:
            summary = self.format_value(value, self.max_value_length)
        ops = self._pending.get(runtime_stage_id)
        if ops is None:
            ops = self._pending[runtime_stage_id] = []
        step = ops[-1][3] + 1 if ops else 1
        ops.append((kind, key, summary, step, operation, value if self._render_op is not None else None))

    def _note(self, runtime_stage_id: str, key: str, tell: Callable[[Any], str | None], value: Any) -> None:
        try:
            text = tell(value)
        except Exception:
            return
        if isinstance(text, str) and text:
            ops = self._pending.setdefault(runtime_stage_id, [])
            ops.append(("note", key, text, ops[-1][3] if ops else 0, "set", None))

    def _stage_line(self, ctx: TraversalContext, name: str, description: str | None, passes: int) -> None:
        flow_key = ctx.subflow_path[-1] if ctx.subflow_path else ""
        number = self._stage_counters.get(flow_key, 0) + 1
        self._stage_counters[flow_key] = number
        first = flow_key not in self._started
        if first:
            self._started.add(flow_key)
        text = None
        if self._render_stage is not None:
            stage_ctx = StageRenderContext(name, number, first, description, passes if passes > 0 else None)
            text = self._render_stage(stage_ctx)
        if text is None and self._wording:  # told now (the kept calls replayed): worded at once
            line = sentences.stage(number, name, description, first, passes)
            self._records.append(("stage", 0, line, name, ctx, None, None))
        elif text is None:
            self._push_line("stage", 0, ctx, name, stage_sentence, (number, name, description, first, passes))
        else:
            self._push("stage", 0, text, ctx, stage_name=name)
        self._flush(ctx, name)

    def _flush(self, ctx: TraversalContext, stage_name: str) -> None:
        if self._batches:
            batch = self._batches.pop(ctx.runtime_stage_id, None)
            if batch:
                records = self._records
                if self._wording or not self._summarizes:  # told now (no value outlives its stage)
                    self._tell_batch(ctx, stage_name, batch, records.append)
                elif type(records) is not Followed:
                    records.append(Batch(ctx, stage_name, batch, self))  # type: ignore[arg-type]
                    self._lazy = True
                else:
                    on_batch = records.on_batch
                    count = self._countable(batch) if on_batch is not None else None
                    if on_batch is None or count is None:  # a reader of entries only, or a note due
                        self._tell_batch(ctx, stage_name, batch, records.append)
                    else:  # a live reader told how many entries, worded when it reads them
                        told = Batch(ctx, stage_name, batch, self)
                        list.append(records, told)
                        self._lazy = True
                        if count:
                            on_batch(told, count)
        ops = self._pending.pop(ctx.runtime_stage_id, None) if self._pending else None
        if not ops:
            return
        push = self._records.append
        numbered, values = self.include_step_numbers, self.include_values
        describe = sentences.operation
        render = self._render_op
        for kind, key, summary, step, operation, raw in ops:
            if kind == "emit":
                push(("emit", 1, sentences.emit(key, summary), stage_name, ctx, None, step))
                continue
            if kind == "note":
                push(("note", 1, summary, stage_name, ctx, key, None))
                continue
            if render is not None:
                op_kind: Any = kind
                custom = render(OpRenderContext(op_kind, key, raw, summary, operation, step))
                if custom == "":
                    continue  # the renderer leaves this step out
                if custom is not None:
                    push(("step", 1, custom, stage_name, ctx, key, step))
                    continue
            text = describe(kind, operation, key, summary, values, step if numbered else None)
            push(("step", 1, text, stage_name, ctx, key, step))

    def _push_line(
        self,
        kind: str,
        depth: int,
        ctx: TraversalContext,
        stage_name: str | None,
        word: Callable[..., str],
        args: tuple[Any, ...],
    ) -> None:
        """Push an entry whose sentence is ``word(*args)``, worded when first read (a ``Line``).

        The numbering and everything the sentence depends on are fixed now (the arguments
        are values nobody changes afterwards); only the wording waits. A live reader (a
        stream) is handed the line at once, worded when it reads the text. While the kept
        calls are told (``_settle``: somebody reads), the sentence is worded at once.
        """
        if self._wording:
            self._records.append((kind, depth, word(*args), stage_name, ctx, None, None))
            return
        line = Line(kind, depth, ctx, stage_name, word, args)
        records = self._records
        self._lazy = True
        if type(records) is Followed:
            list.append(records, line)
            if records.on_batch is not None:
                records.on_batch(line, 1)
            else:
                records.on_entry(line.entries()[0])
        else:
            records.append(line)  # type: ignore[arg-type]

    def _push(
        self,
        kind: str,
        depth: int,
        text: str,
        ctx: TraversalContext,
        *,
        stage_name: str | None = None,
        key: str | None = None,
        step: int | None = None,
    ) -> None:
        self._records.append((kind, depth, text, stage_name, ctx, key, step))
        if self._announce is not None and not self._wording:  # told now, outside the kept calls
            self._announce_lines(ctx, 1)
