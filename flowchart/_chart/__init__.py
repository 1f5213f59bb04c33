"""Internal: see docs/architecture.md, "The layers of flowchart"."""
