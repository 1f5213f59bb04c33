"""LangGraph scripts for W1-W6, run with the peers venv (bench/.cache/peers-venv)."""
