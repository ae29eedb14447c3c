"""`vocab:<K>:<draft spec>` through the registry (app/drafting/vocab_draft.py): S is the K tokens the target
emits most in its own greedy answers, stop tokens always in, counted once and cached; greedy output through
it equals target-only; `measure` reports α and the draft's cost per K beside the full head."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from engine.helpers import chat_greedy_pair

from app.drafting import registry, vocab_draft
from app.drafting.drafts import make_drafter
from app.engine import ModelDrafter
from app.models import load_model


@pytest.fixture
def few_prompts(monkeypatch):
    monkeypatch.setattr(vocab_draft, "COUNT_PROMPTS", 4)
    monkeypatch.setattr(vocab_draft, "COUNT_TOKENS", 24)


def test_top_tokens_holds_the_forced_then_the_most_frequent():
    counts = Counter({5: 9, 7: 9, 2: 4, 9: 1})
    assert vocab_draft.top_tokens(counts, 4, forced={1, 40}, vocab=20) == [1, 2, 5, 7]  # 40: outside the vocabulary
    assert vocab_draft.top_tokens(counts, 3, forced=(), vocab=20) == [2, 5, 7]
    assert vocab_draft.top_tokens(Counter(), 3, forced=(), vocab=20) == [0, 1, 2]  # unseen: by id
    assert len(vocab_draft.top_tokens(counts, 99, forced=(), vocab=20)) == 20


@pytest.mark.parametrize("spec", ["vocab:x:draft", "vocab:0:draft", "vocab:8:", "vocab:8"])
def test_a_malformed_spec_says_how_to_write_it(spec):
    assert registry.kind_of(spec).factory == "app.drafting.vocab_draft:vocab_draft"
    with pytest.raises(ValueError, match="vocab:<K>"):
        vocab_draft.parse(spec)


def test_parse_keeps_colons_of_the_inner_spec():
    assert vocab_draft.parse("vocab:8192:C:\\models\\draft.gguf") == (8192, "C:\\models\\draft.gguf")


def test_the_subset_draft_through_the_registry_equals_target_only(tiny_pair_dirs, few_prompts, monkeypatch):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    drafter = make_drafter(f"vocab:12:{tiny_pair_dirs[1]}", target)
    assert isinstance(drafter, ModelDrafter) and drafter.vocab_ids is not None and len(drafter.vocab_ids) == 12
    assert set(target.stop_token_ids) <= set(drafter.vocab_ids.tolist())
    counts = vocab_draft.target_counts(target)
    assert drafter.vocab_ids.tolist() == vocab_draft.top_tokens(counts, 12, vocab_draft.forced_ids(target),
                                                                target.vocab_size)
    monkeypatch.setattr(vocab_draft, "measure_counts", lambda *a, **k: pytest.fail("the counts were not cached"))
    assert vocab_draft.target_counts(target) == counts
    expected, got = chat_greedy_pair(target, drafter)
    assert got.token_ids == expected.token_ids and any(r.drafted for r in got.rounds)


def test_only_a_draft_model_is_cut(tiny_pair_dirs, few_prompts):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    with pytest.raises(ValueError, match="only a draft model"):
        make_drafter("vocab:8:prompt-lookup", target)


def test_measure_reports_alpha_and_cost_per_k(tiny_pair_dirs, few_prompts):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    drafter = make_drafter(str(tiny_pair_dirs[1]), target)
    rows = vocab_draft.measure(target, drafter, ks=(8, 16, 10**6), prompts=2, max_new_tokens=12, gamma=3)
    assert [r["k"] for r in rows] == [None, 8, 16]  # the full head first; a K past the vocabulary is the full head
    assert rows[0]["coverage"] == 1.0
    for r in rows:
        assert 0.0 <= r["alpha"] <= 1.0 and r["draft_ms_per_token"] > 0 and r["step_ms"] > 0 and r["speedup"] > 0
    assert vocab_draft.best_k(rows) in (None, 8, 16)


def test_the_modelled_speedup_is_the_papers_and_picks_k():
    """algorithm.md's teaching example: α 0.5, c 0.1 gives 1.46 at γ 2 and 1.38 at γ 4."""
    assert round(vocab_draft.modelled_speedup(0.5, 0.1, 2), 2) == 1.46
    assert round(vocab_draft.modelled_speedup(0.5, 0.1, 4), 2) == 1.38
    assert vocab_draft.modelled_speedup(1.0, 0.0, 4) == 5.0
    rows = [{"k": None, "speedup": 1.2}, {"k": 8192, "speedup": 1.3}, {"k": 4096, "speedup": 1.1}]
    assert vocab_draft.best_k(rows) == 8192


def test_auto_k_is_measured_once_and_cached(tiny_pair_dirs, few_prompts, monkeypatch):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    monkeypatch.setattr(vocab_draft, "CANDIDATES", (8, 16))
    spec = f"vocab:auto:{tiny_pair_dirs[1]}"
    assert vocab_draft.parse(spec) == (None, str(tiny_pair_dirs[1]))
    first = make_drafter(spec, target)
    assert isinstance(first, ModelDrafter)
    monkeypatch.setattr(vocab_draft, "measure", lambda *a, **k: pytest.fail("the choice of K was not cached"))
    again = make_drafter(spec, target)
    assert (first.vocab_ids is None) == (again.vocab_ids is None)
    assert first.vocab_ids is None or torch.equal(first.vocab_ids, again.vocab_ids)


@pytest.mark.slow
@pytest.mark.xdist_group("default-model")
def test_the_embedded_models_subset_self_draft_greedy_equals_target_only(default_target):
    """The embedded model drafting for itself over 4,096 tokens (the forced ones, then by id: many answer
    tokens outside S, so corrections outside it happen), on the path it loads on (native where built)."""
    target = default_target
    drafter = vocab_draft.over_subset(ModelDrafter(target.model), vocab_draft.subset_of(target, 4096, Counter()))
    expected, got = chat_greedy_pair(target, drafter, "Name three primary colours.", new_tokens=48)
    assert set(expected.token_ids) - set(drafter.vocab_ids.tolist())
    assert got.token_ids == expected.token_ids and any(r.accepted for r in got.rounds)
