"""Layer A4 — readers at the edge: ``explain_answer`` (``agent why``), the viewer's agent
panel and the command line's shared helpers. They read a record; they never run a chart."""
