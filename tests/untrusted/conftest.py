"""The untrusted-input suites share the pause charts (``tests/pause``) for real checkpoints."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "pause"))
