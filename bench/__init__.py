"""Benchmarks: pyfootprint beside LangGraph and footprintjs (see docs/performance.md)."""
