"""The old home of value summaries, kept so ``from flowchart.recorders.summary import ...`` works.

They live in the bottom layer now (``flowchart/summary.py``): ``decide()`` prints evidence
with them, and a bottom-layer rule must not import the recorders package.
"""

from ..summary import js_json, js_number, js_object_keys, summarize_value

__all__ = ["js_json", "js_number", "js_object_keys", "summarize_value"]
