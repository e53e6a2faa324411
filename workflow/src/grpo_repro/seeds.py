"""Seeds derived from names (every stage): stable across processes and Python versions."""

from __future__ import annotations

import hashlib
import json


def derive_seed(*parts) -> int:
    """A 63-bit seed from any JSON-serialisable parts, e.g. derive_seed(0, "grpo", 60, "test", "test_00001").

    sha256 of the JSON list of the parts: stable across processes and Python versions (unlike hash())."""
    blob = json.dumps(list(parts), sort_keys=True, default=str, separators=(",", ":")).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") & (2**63 - 1)
