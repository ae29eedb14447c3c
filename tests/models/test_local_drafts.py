"""Auto weighs the draft models the user already has: compatible ones beside the target's file, in the real pair's
download folder and in the hub cache (app.drafting.local_drafts), timed like the other candidates and run per round
with lookup (lookup where it proposes, else the draft); greedy output stays the target's own."""

from __future__ import annotations

import pytest
from permuted import permuted_tokenizer
from tiny_models import char_tokenizer, tiny_model

from app.drafting import auto as calibration
from app.drafting import local_drafts
from app.drafting.auto import AUTO, candidate_specs, select
from app.drafting.local_drafts import REAL_PAIR_FOLDER, local_draft_candidates
from app.engine import DecodeParams, generate
from app.engine.lookup_else import LookupElseDrafter
from app.engine.policy import DrafterProfile, VerifyCosts
from app.engine.result import Result
from app.models import load_model
from app.paths import user_cache_dir
from app.session.answer_loop import AnswerLoop


def _save(folder, layers: int, tokenizer=None, seed: int = 0):
    model = tiny_model(layers=layers, seed=seed)
    model.generation_config.eos_token_id = 1
    model.save_pretrained(folder)
    (tokenizer or char_tokenizer()).save_pretrained(folder)
    return folder


@pytest.fixture
def models(tmp_path):
    """target (4 layers) with, beside it: a compatible 1-layer draft, a 1-layer one with another tokenizer, and a
    compatible model as large as the target."""
    root = tmp_path / "models"
    local_drafts._VERDICTS.clear()
    return {"target": _save(root / "target", 4), "draft": _save(root / "draft", 1, seed=3),
            "permuted": _save(root / "permuted", 1, permuted_tokenizer()), "large": _save(root / "large", 4, seed=5)}


def test_a_compatible_smaller_draft_beside_the_target_is_a_candidate_and_others_are_not(models):
    target = load_model(str(models["target"]), device="cpu")
    assert local_draft_candidates(target) == [str(models["draft"])]
    assert str(models["draft"]) in candidate_specs(target)  # the model kind's AutoRule names it
    assert str(models["permuted"]) not in candidate_specs(target)


def test_a_verdict_is_kept_in_the_cache_until_a_file_changes(models, monkeypatch):
    target = load_model(str(models["target"]), device="cpu")
    assert local_draft_candidates(target) == [str(models["draft"])]
    local_drafts._VERDICTS.clear()  # a new process: the verdicts come from the cache file
    monkeypatch.setattr(local_drafts, "_tokenizer", lambda spec: pytest.fail("read the tokenizer again"))
    assert local_draft_candidates(target) == [str(models["draft"])]
    _save(models["draft"], 1, permuted_tokenizer(), seed=3)  # replaced by another family's model
    monkeypatch.undo()
    assert local_draft_candidates(target) == []


def test_the_real_pairs_download_and_the_hub_cache_are_looked_in(models, fake_hub):
    target = load_model(str(models["target"]), device="cpu")
    for name in ("draft", "permuted"):
        (models[name]).rename(models[name].parent.parent / name)  # no longer beside the target
    assert local_draft_candidates(target) == [str(_hub_path(fake_hub))]  # org/tiny: 2 layers, compatible
    pair = user_cache_dir() / REAL_PAIR_FOLDER
    _save(pair / "draft", 1, seed=3)
    _save(pair / "other-family", 1, permuted_tokenizer())
    assert local_draft_candidates(target) == [str(pair / "draft"), str(_hub_path(fake_hub))]


def _hub_path(repo_id: str):
    from pathlib import Path

    from app.drafting.catalog import _hub_cache_entries

    return Path(next(e.path for e in _hub_cache_entries() if e.spec == repo_id))


def test_the_embedded_model_and_a_target_with_nothing_beside_it_have_no_local_candidates(tmp_path):
    alone = load_model(str(_save(tmp_path / "alone" / "target", 2)), device="cpu")
    assert local_draft_candidates(alone) == []


def test_a_local_draft_that_pays_runs_per_round_with_lookup_and_greedy_is_the_targets(models, monkeypatch):
    target = load_model(str(models["target"]), device="cpu")
    draft = str(models["draft"])
    profiles = {draft: DrafterProfile(draft, "draft", 0.1, 0.9),
                "prompt-lookup": DrafterProfile("prompt-lookup", "prompt lookup", 0.001, 0.8, coverage=0.4)}
    costs = tuple(0.05 * (1 + 0.05 * n) for n in range(33))
    monkeypatch.setattr(calibration, "measure_verify", lambda model, ids, n_max, **k: VerifyCosts(costs[:n_max]))
    monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: profiles.get(
        spec, DrafterProfile(spec, spec, 2.0, 0.1)))
    monkeypatch.setattr(calibration, "with_tree", lambda target, drafter, ids, profile, verify: profile)
    sel = select(target, AUTO, use_cache=False)
    assert isinstance(sel.drafter, LookupElseDrafter) and sel.spec == draft
    assert sel.choice.gamma >= 6  # α 0.9 at c 0.1: long chains pay (8 alone)
    prompt = target.encode_chat([{"role": "user", "content": "abc abc abc abc"}])
    params = DecodeParams(temperature=0.0, max_new_tokens=40, seed=0)
    loop = AnswerLoop(target=target, params=params, drafter=sel.drafter, controller=sel.auto_gamma())
    ran = Result()
    for event in loop.events(prompt):  # γ on auto: the live controller sets every round's
        ran.add(event)
    alone = generate(target.model, prompt, None, params, vocab_size=target.vocab_size,
                     stop_token_ids=target.stop_token_ids)
    assert ran.token_ids == alone.token_ids
    assert any(r.drafted for r in ran.rounds[1:]) and len({r.gamma for r in ran.rounds[1:]}) >= 1
