"""The untrusted-input suites share the pause charts (``tests/pause``) for real checkpoints, and the
store's refund agent and servers (``tests/store``) for real stored runs."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "pause"))
sys.path.insert(0, str(Path(__file__).parent.parent / "store"))
