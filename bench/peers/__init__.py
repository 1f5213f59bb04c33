"""Reference implementations of SPEC.md on the peer engines."""
