"""What each model call cost: ``Price``, the built-in price table, and the per-call cost row.

Laws:
- A call's cost is computed from the usage the server reported and the price of the model
  that answered, in exact arithmetic (integers scaled by a power of ten: ``cost_money``), and
  recorded as a decimal string of US dollars
  (``"0.0001275"``) on the model-call commit — so the run's total is the exact sum of its
  calls' costs, never a float's approximation.
- Unknown is never a guess: a model that is in no price table, or a call whose usage was not
  reported, costs ``"unknown"``. Cached prompt tokens are charged at ``cached_input_per_mtok``
  only when the server reported them and the price names it; otherwise at the input price.
- ``BUILT_IN_PRICES`` is small and dated (``PRICES_DATED``); ``Agent.create(pricing=...)``
  entries win over it, model by model. A price table is checked at build: a price that is
  not a number, or is negative, is refused naming the model and the field.
- Every model call is costed by default (the built-in table, ``pricing=`` over it); only
  ``pricing=False`` turns cost accounting off (its record has no cost keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import attrs

__all__ = [
    "BUILT_IN_PRICES",
    "PRICES_DATED",
    "Price",
    "call_cost",
    "price_table",
    "usd_text",
]


def _price(value: Any, field: str) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        raise ValueError(f"{field} must be a number of US dollars per million tokens, got {value!r}")
    try:
        number = Decimal(str(value))
    except ArithmeticError:
        raise ValueError(f"{field} must be a number of US dollars per million tokens, got {value!r}") from None
    if not number.is_finite():
        raise ValueError(f"{field} must be a finite number, got {value!r}")
    if number < 0:
        raise ValueError(f"{field} must not be negative, got {value!r}")
    return number


def _checked(field: str, required: bool) -> Any:
    def check(_self: Any, _attribute: Any, value: Any) -> None:
        if value is None and required:
            raise ValueError(f"Price({field}=...) is required")
        _price(value, f"Price({field}=...)")

    return check


@attrs.frozen
class Price:
    """A model's price in US dollars per million tokens: input, output, and (optionally) cached
    input tokens; ``Price(input_per_mtok=2.5, output_per_mtok=10, cached_input_per_mtok=1.25)``.

    A price that is not a number, is negative or is not finite is refused when made."""

    input_per_mtok: float | Decimal | str = attrs.field(validator=_checked("input_per_mtok", True))
    output_per_mtok: float | Decimal | str = attrs.field(validator=_checked("output_per_mtok", True))
    cached_input_per_mtok: float | Decimal | str | None = attrs.field(
        default=None, validator=_checked("cached_input_per_mtok", False)
    )

    def cost(self, usage: Any) -> Decimal:
        """The exact cost in dollars of ``usage`` (a ``Usage``) at this price."""
        return Decimal(cost_text(self, usage))


# -- exact money in integers: a cost is ``units × 10**-exponent`` dollars ---------------------------
# (a call's cost is on the hot path: integer arithmetic is exact and several times cheaper than
# Decimal's, and the text is written without ``format``)
Money = tuple[int, int]
#: a price as integers: (input, output, cached input or None) units per million tokens, and the exponent
Figures = tuple[int, int, int | None, int]


def _money_of(value: Any) -> Money:
    """``value`` (a price) as (units, exponent)."""
    sign, digits, exponent = Decimal(str(value)).as_tuple()
    units = int("".join(map(str, digits)) or "0")
    assert isinstance(exponent, int)
    if exponent > 0:
        return units * 10**exponent, 0
    return (-units if sign else units), -exponent


def parse_money(text: str) -> Money:
    """A decimal text the record wrote (``"0.00325"``) as (units, exponent)."""
    whole, _, fraction = text.partition(".")
    return int(whole + fraction), len(fraction)


def add_money(a: Money, b: Money) -> Money:
    """``a + b``, exactly."""
    if a[1] < b[1]:
        a, b = b, a
    return a[0] + b[0] * 10 ** (a[1] - b[1]), a[1]


def money_text(money: Money) -> str:
    """The record's text of ``money``: a plain decimal, no trailing zeros, no exponent."""
    units, exponent = money
    if exponent == 0:
        return str(units)
    digits = str(abs(units)).rjust(exponent + 1, "0")
    text = (digits[:-exponent] + "." + digits[-exponent:]).rstrip("0").rstrip(".")
    return ("-" if units < 0 else "") + text


_FIGURES: dict[int, tuple[Price, tuple[int, int, int | None, int]]] = {}


def figures_of(price: Price) -> tuple[int, int, int | None, int]:
    """A price's figures as integer units per million tokens at one common exponent: (input,
    output, cached input or None, exponent) — made once per price (a model-call stage makes them
    when it is built)."""
    return _figures(price)


def _figures(price: Price) -> tuple[int, int, int | None, int]:
    """``figures_of``, kept per price object."""
    found = _FIGURES.get(id(price))
    if found is not None and found[0] is price:
        return found[1]
    parts = [_money_of(price.input_per_mtok), _money_of(price.output_per_mtok)]
    if price.cached_input_per_mtok is not None:
        parts.append(_money_of(price.cached_input_per_mtok))
    exponent = max(part[1] for part in parts)
    units = [part[0] * 10 ** (exponent - part[1]) for part in parts]
    figures = (units[0], units[1], units[2] if len(units) > 2 else None, exponent + 6)  # per million
    if len(_FIGURES) > 1024:
        _FIGURES.clear()
    _FIGURES[id(price)] = (price, figures)
    return figures


def cost_money(price: Price, usage: Any) -> Money:
    """The exact cost of ``usage`` at ``price``: fresh input tokens at the input price, cached ones
    at the cached price (when both the count and the price exist), output at the output price."""
    inputs, outputs, cached_price, exponent = _figures(price)
    fresh = usage.input_tokens
    units = 0
    cached = usage.cached_input_tokens
    if cached is not None and cached_price is not None:
        cached = min(cached, fresh)
        fresh -= cached
        units = cached * cached_price
    return units + fresh * inputs + usage.output_tokens * outputs, exponent


def cost_text(price: Price, usage: Any) -> str:
    """``cost_money`` as the record writes it."""
    return money_text(cost_money(price, usage))


PRICES_DATED = "2025-06-01"
"""The day the built-in prices were read from the providers' price pages."""

BUILT_IN_PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(input_per_mtok="2.50", output_per_mtok="10.00", cached_input_per_mtok="1.25"),
    "gpt-4o-mini": Price(input_per_mtok="0.15", output_per_mtok="0.60", cached_input_per_mtok="0.075"),
    "gpt-4.1": Price(input_per_mtok="2.00", output_per_mtok="8.00", cached_input_per_mtok="0.50"),
    "gpt-4.1-mini": Price(input_per_mtok="0.40", output_per_mtok="1.60", cached_input_per_mtok="0.10"),
    "gpt-4.1-nano": Price(input_per_mtok="0.10", output_per_mtok="0.40", cached_input_per_mtok="0.025"),
    "o3": Price(input_per_mtok="2.00", output_per_mtok="8.00", cached_input_per_mtok="0.50"),
    "o4-mini": Price(input_per_mtok="1.10", output_per_mtok="4.40", cached_input_per_mtok="0.275"),
    "claude-sonnet-4-0": Price(input_per_mtok="3.00", output_per_mtok="15.00", cached_input_per_mtok="0.30"),
    "claude-opus-4-0": Price(input_per_mtok="15.00", output_per_mtok="75.00", cached_input_per_mtok="1.50"),
    "claude-3-5-haiku-latest": Price(input_per_mtok="0.80", output_per_mtok="4.00", cached_input_per_mtok="0.08"),
}
"""Prices of a few common models (``PRICES_DATED``); ``Agent.create(pricing=...)`` overrides them."""


def price_table(pricing: Any) -> dict[str, Price]:
    """The built-in table with ``pricing`` (model name → ``Price`` or a dict of its fields) over it;
    ``ValueError`` naming the model and the field for a bad entry."""
    if not isinstance(pricing, Mapping):
        raise ValueError(f"Agent.create(pricing=...): expected a dict of model name → Price, got {pricing!r}")
    table = dict(BUILT_IN_PRICES)
    for model, price in pricing.items():
        if not isinstance(model, str) or not model:
            raise ValueError(f"Agent.create(pricing=...): a model name must be a non-empty string, got {model!r}")
        if isinstance(price, Mapping):
            unknown = sorted(set(price) - {"input_per_mtok", "output_per_mtok", "cached_input_per_mtok"})
            if unknown:
                raise ValueError(f"Agent.create(pricing=...): model '{model}': unknown field {unknown[0]!r}")
            try:
                price = Price(**price)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"Agent.create(pricing=...): model '{model}': {exc}") from None
        if not isinstance(price, Price):
            raise ValueError(
                f"Agent.create(pricing=...): model '{model}': expected a Price(input_per_mtok=..., "
                f"output_per_mtok=...), got {type(price).__name__}"
            )
        table[model] = price
    return table


def usd_text(amount: Decimal) -> str:
    """``amount`` as the record writes dollars: a plain decimal string, exact, no exponent."""
    text = format(amount, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def call_cost(table: Mapping[str, Price], models: tuple[str | None, ...], usage: Any) -> tuple[str | None, str]:
    """(the priced model, the cost text) of one call: the first of ``models`` (the configured
    model, then the one the server says answered) that the table prices; ``"unknown"`` when none
    is priced or the usage was not reported."""
    for model in models:
        price = table.get(model) if model else None
        if price is not None:
            if usage is None:
                return model, "unknown"
            return model, cost_text(price, usage)
    return None, "unknown"
