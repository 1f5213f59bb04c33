"""Layer A1 — tools as values: a tool's definition, its schema from type hints and docstrings,
and the argument check. Nothing here knows a chart, a run or a store."""
