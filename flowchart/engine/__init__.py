"""The engine: traversal, run bookkeeping, recorder dispatch and the run entry points.

Internal: use the façade (``flowchart``) — ``chart.run`` / ``chart.resume``.
"""
