"""The deterministic sample: a conversation is taken by a hash of the seed and its id alone, so
more traffic never reshuffles what was already sampled and a higher rate takes a superset."""

from __future__ import annotations

import hashlib

__all__ = ["is_sampled", "sample_score"]


def sample_score(conversation_id: str, seed: str | int) -> float:
    """Where a conversation falls in [0, 1) for `seed`: sha256 of the seed and the id."""
    digest = hashlib.sha256(f"{seed}\x00{conversation_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_sampled(conversation_id: str, rate: float, seed: str | int) -> bool:
    """Whether the sample at `rate` takes this conversation; depends on nothing else, so a
    sample at a higher rate contains the one at a lower rate, and new traffic changes neither."""
    return sample_score(conversation_id, seed) < rate
