"""The engine: traversal (``traversal``), the run's state (``run_state``), recorder dispatch
(``observers``) and the entry points (``entry``).

Internal: use the façade (``flowchart``) — ``chart.run`` / ``chart.resume``.
"""
