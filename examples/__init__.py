"""Runnable examples (``python -m examples.loan``; ``flowchart show examples.loan:chart``)."""
