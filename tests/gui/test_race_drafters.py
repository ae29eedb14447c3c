"""The race's drafters: prompt lookup as every front end builds it (the registry's, app.drafting.registry), so a
race never shows lookup proposing the chat template's tokens."""

from __future__ import annotations

import pytest

from app.drafting.drafts import template_tokens
from app.gui.race_flow import race_drafters
from app.models import load_model


@pytest.fixture(scope="module")
def target(tiny_pair_dirs):
    return load_model(str(tiny_pair_dirs[0]), device="cpu")


def test_the_race_builds_prompt_lookup_through_the_registry(target):
    placed = template_tokens(target)
    assert placed
    first, second = race_drafters("lookup", None, target)  # no draft: lookup against lookup
    assert first is not second and first.never == second.never == placed
    chain, tree = race_drafters("tree", None, target)  # lookup's chain against its token tree
    assert chain.never == placed and tree.never == placed and tree.budget > 0
    assert race_drafters("target", None, target)[1].never == placed
