"""Field-level redaction reaches the recorders' data events, as footprintjs's recorders see it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flowchart import Redaction, flow_chart

FIXTURE = Path(__file__).parent.parent / "fixtures" / "footprintjs" / "redaction.json"


class DataEvents:
    """Keeps every on_read / on_write event as footprintjs's fixture spells it."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def on_read(self, event: Any) -> None:
        self.events.append({"hook": "onRead", "key": event.key, "value": event.value, "redacted": event.redacted})

    def on_write(self, event: Any) -> None:
        self.events.append(
            {
                "hook": "onWrite",
                "key": event.key,
                "value": event.value,
                "redacted": event.redacted,
                "operation": event.operation,
            }
        )


def _card_chart() -> Any:
    def seed(scope: Any) -> None:
        scope.card = {"num": "4111", "exp": "12/30"}
        scope.patients = [{"name": "Ann", "ssn": "123"}, {"name": "Bo", "ssn": "456"}]

    def use(scope: Any) -> None:
        scope.card["exp"] = "01/31"
        _ = scope.patients

    return flow_chart("Seed", seed, "seed").add_function("Use", use, "use").build()


def test_field_redaction_hides_nested_values_in_read_and_write_events() -> None:
    """With ``fields={"card": ["num"]}`` the events for ``card`` carry ``{"num": "[REDACTED]", ...}``
    and ``redacted: True`` (footprintjs 9.24's events), never the real card number."""
    expected = [
        {k: e[k] for k in ("hook", "key", "value", "redacted")}
        for e in json.loads(FIXTURE.read_text(encoding="utf-8"))["events"]
        if e.get("key") == "card"
    ]
    events = DataEvents()
    _card_chart().run(recorders=[events], redaction=Redaction(fields={"card": ["num"]}))
    card = [{k: e[k] for k in ("hook", "key", "value", "redacted")} for e in events.events if e["key"] == "card"]
    assert card[:2] == [expected[0], {**expected[0], "hook": "onRead"}]
    assert "4111" not in json.dumps(events.events)


def test_field_redaction_applies_to_every_item_of_a_list_in_events() -> None:
    """A field path inside a list of records is hidden in each item of the event's value."""
    events = DataEvents()
    result = _card_chart().run(recorders=[events], redaction=Redaction(fields={"patients": ["ssn"]}))
    shown = [e for e in events.events if e["key"] == "patients"]
    assert [e["value"] for e in shown] == [
        [{"name": "Ann", "ssn": "[REDACTED]"}, {"name": "Bo", "ssn": "[REDACTED]"}]
    ] * 2
    assert all(e["redacted"] for e in shown)
    assert result.state["patients"][0]["ssn"] == "123"  # the live state keeps the real value


def test_field_redaction_events_leave_unnamed_keys_untouched() -> None:
    """Keys without a field rule are reported as they are, ``redacted: False``."""
    events = DataEvents()
    _card_chart().run(recorders=[events], redaction=Redaction(fields={"patients": ["ssn"]}))
    card = [e for e in events.events if e["key"] == "card"]
    assert card[0]["value"] == {"num": "4111", "exp": "12/30"}
    assert not any(e["redacted"] for e in card)
