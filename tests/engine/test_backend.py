"""A model that is not a transformers model brings its own cache backend (`cache_backend`), and the rounds
reach it only through that backend: chain and tree rounds, on it as a target and as a draft model."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from app.engine import DecodeParams, ModelDrafter, Unsupported, generate
from app.engine.kv import TransformersBackend
from app.engine.static import StaticDecoder
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter

PROMPT = [5, 9, 12, 7, 3, 5, 9, 12]
GREEDY = DecodeParams(gamma=4, temperature=0, max_new_tokens=24, seed=0)


class CountingBackend(TransformersBackend):
    """The transformers backend, counting every call the engine makes (a stand-in for a native model's own)."""

    def __init__(self, model, calls: Counter) -> None:
        super().__init__(model)
        self.calls = calls
        for name in ("new_cache", "length", "forward", "trunk", "head", "rollback", "tree_forward", "compact"):
            setattr(self, name, self._counted(name, getattr(self, name)))

    def _counted(self, name, fn):
        def call(*args, **kwargs):
            self.calls[name] += 1
            return fn(*args, **kwargs)
        return call


class Native:
    """No forward, no parameters(): only a config and its own backend, as a C-extension model would have."""

    def __init__(self, model) -> None:
        self.config = model.config
        self.calls: Counter = Counter()
        self.cache_backend = lambda: CountingBackend(model, self.calls)


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_rounds_reach_the_model_only_through_its_backend(vocab34_pair, kind):
    target, draft = vocab34_pair
    native_target, native_draft = Native(target), Native(draft)
    vocab = target.config.vocab_size

    def drafter(model):
        if kind == "chain":
            return ModelDrafter(model)
        return ModelTreeDrafter(model, budget=6, depth=4, top_k=3)

    expected = generate(target, torch.tensor(PROMPT), drafter(draft), GREEDY, vocab_size=vocab)
    got = generate(native_target, torch.tensor(PROMPT), drafter(native_draft), GREEDY, vocab_size=vocab)
    assert got.token_ids == expected.token_ids and got.statuses == expected.statuses
    assert sum(r.accepted for r in got.rounds) > 0
    verify = "tree_forward" if kind == "tree" else "forward"
    assert native_target.calls[verify] == len(got.rounds) and native_target.calls["compact"] == len(got.rounds)
    assert native_draft.calls["forward"] > 0 and native_draft.calls["rollback"] > 0
    if kind == "tree":
        assert native_draft.calls["tree_forward"] > 0  # the expansion's levels
        lookup = generate(native_target, torch.tensor(PROMPT), LookupTreeDrafter(), GREEDY, vocab_size=vocab)
        assert lookup.token_ids == generate(target, torch.tensor(PROMPT), LookupTreeDrafter(), GREEDY,
                                            vocab_size=vocab).token_ids


def test_static_caches_refuse_a_model_with_its_own_backend(vocab34_pair):
    with pytest.raises(Unsupported, match="run transformers models"):
        StaticDecoder(Native(vocab34_pair[0]))
