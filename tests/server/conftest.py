"""Fixtures for the server tests: the tiny pair loaded once, and a server over it for a module."""

from __future__ import annotations

import pytest
from server_helpers import serving

from app.engine import DecodeParams


@pytest.fixture(scope="session")
def tiny_loaded(tiny_pair_dirs):
    from app.drafting.drafts import make_drafter
    from app.models import load_model

    target_dir, draft_dir = tiny_pair_dirs
    target = load_model(str(target_dir), device="cpu")
    return target, make_drafter(str(draft_dir), target)


@pytest.fixture(scope="module")
def tiny_server(tiny_loaded):
    """Sampling at temperature 1 (every token status shows up), γ 3, 24 new tokens by default."""
    target, drafter = tiny_loaded
    with serving(target, drafter, DecodeParams(gamma=3, temperature=1.0, max_new_tokens=24, seed=None)) as sh:
        yield sh
