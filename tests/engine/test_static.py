"""Static caches (app.engine.static): the dynamic-cache engine's tokens exactly, with one host sync a round.

Greedy runs must match token for token; sampled runs must follow the exact joint law (the chi-square test
of test_joint_distribution, run through the static path). Compiled steps are checked with the aot_eager
backend here (dynamo tracing and functionalised cache writes, seconds to build) and with inductor in a
slow test (a minute or more of C++ compiling on a CPU; slow tests run in CI too).
"""

from __future__ import annotations

import pytest
import torch
from tiny_models import noisy_copy

from app.engine import DecodeParams, ModelDrafter, PromptLookupDrafter, RoundEvent, decode, generate
from app.engine.drafters import unsupported_on_static
from app.engine.runner import Runner
from app.engine.static import StaticDecoder
from app.engine.static_kv import StaticModel
from engine.helpers import chi_square_p, exact_joint, sampled_joint

GAMMAS = (1, 4, 8)
PROMPTS = ([5, 9, 12], [20, 3, 3, 8, 14, 20, 3])
NEW_TOKENS = 30
# Samples of the law through static caches: a planted resample-from-p is rejected at p < 1e-6 from 2,000 of this
# law (tests/engine/test_joint_distribution.py, which holds the dynamic caches' law at 6,000).
STATIC_SAMPLES = 3_000
STOP = 1


@pytest.fixture(scope="module")
def close_draft(vocab34_pair):
    """A draft that greedy agrees with for several tokens in a row: full accepts and the catch-up step."""
    return noisy_copy(vocab34_pair[0], 0.3)


def make_drafter(kind: str, draft):
    return {"none": None, "model": ModelDrafter(draft), "prompt lookup": PromptLookupDrafter()}[kind]


def run(target, prompt, drafter, gamma, static=None, params=None):
    params = params or DecodeParams(gamma=gamma, temperature=0, max_new_tokens=NEW_TOKENS, seed=0)
    return generate(target, torch.tensor(prompt), drafter, params, stop_token_ids=(STOP,), static=static)


def signature(result) -> tuple:
    """Tokens, statuses and each round's acceptance test as the events report it (greedy: all exact)."""
    rounds = [(r.drafted, r.accepted, r.emitted, r.drafts, r.u, r.accept_prob, r.next_token, r.top_p, r.top_q,
               r.next_top) for r in result.rounds]
    return result.token_ids, result.statuses, rounds


@pytest.mark.parametrize("kind", ["none", "model", "prompt lookup"])
def test_greedy_matches_the_dynamic_engine(vocab34_pair, close_draft, kind):
    target = vocab34_pair[0]
    static = StaticDecoder(target, min_capacity=64)
    full_accepts = 0
    for prompt in PROMPTS:
        for gamma in GAMMAS:
            drafter = make_drafter(kind, close_draft)
            expected = run(target, prompt, drafter, gamma)
            got = run(target, prompt, drafter, gamma, static)
            assert signature(got) == signature(expected), (prompt, gamma)
            full_accepts += sum(r.bonus for r in got.rounds)
    if kind == "model":
        assert full_accepts >= 5  # the draft-cache catch-up after a full accept really ran


def test_planted_mask_leak_is_caught(vocab34_pair, close_draft, monkeypatch):
    """Planted bug: queries see every slot, so stale drafts and padding leak into attention."""
    target, _ = vocab34_pair
    expected = run(target, PROMPTS[0], ModelDrafter(close_draft), 4)
    monkeypatch.setattr(StaticModel, "_mask", lambda self, pos: torch.zeros(1, 1, len(pos), len(self.slots)))
    got = run(target, PROMPTS[0], ModelDrafter(close_draft), 4, StaticDecoder(target, min_capacity=64))
    assert got.token_ids != expected.token_ids


def test_buffers_grow_when_live_params_ask_for_more(vocab34_pair, close_draft):
    """max_new_tokens raised mid-answer past the buffers: they grow, keeping what the caches hold."""
    target, _ = vocab34_pair
    rounds = []

    def params():
        return DecodeParams(gamma=4, temperature=0, max_new_tokens=8 if len(rounds) < 2 else 70, seed=0)

    def answer(static):
        rounds.clear()
        out = []
        for event in decode(target, torch.tensor(PROMPTS[1]), ModelDrafter(close_draft), params, static=static):
            if isinstance(event, RoundEvent):
                rounds.append(event)
            out.append(event)
        return out[-1].token_ids

    static = StaticDecoder(target, min_capacity=16)
    expected = answer(None)
    assert len(expected) == 70
    assert answer(static) == expected
    assert static.model(target, 16).capacity >= 77


def test_one_host_sync_per_round(vocab34_pair, close_draft, monkeypatch):
    """Every device-to-host read a tensor offers is counted inside each round: exactly one (the packed verdict)."""
    target, _ = vocab34_pair
    reads = []
    honest_step = Runner.step

    def counted_step(self, *args):
        reads.append(0)
        return honest_step(self, *args)

    for name in ("tolist", "item", "__int__", "__float__", "__bool__", "__index__", "numpy", "cpu"):
        honest = getattr(torch.Tensor, name)

        def counting(tensor, *a, _honest=honest, **k):
            if reads:
                reads[-1] += 1
            return _honest(tensor, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, counting)
    monkeypatch.setattr(Runner, "step", counted_step)
    static = StaticDecoder(target, min_capacity=64)
    for drafter in (None, ModelDrafter(close_draft), PromptLookupDrafter()):
        reads.clear()
        run(target, PROMPTS[1], drafter, 4, static)
        assert reads and set(reads) == {1}, (drafter, reads)


def test_unsupported_drafter_is_refused(vocab34_pair):
    class Other:
        name = "other"
        wants_features = False
        proposes = "chain"

        def seed(self, seed):
            pass

        def begin(self):
            pass

        def static_form(self):
            raise unsupported_on_static(self)

    with pytest.raises(ValueError, match="does not support the other drafter"):
        run(vocab34_pair[0], PROMPTS[0], Other(), 2, StaticDecoder(vocab34_pair[0]))


def test_static_path_matches_exact_joint(vocab8_pair):
    """The joint law of the first 3 tokens through static caches (gamma 3: full accepts, catch-up, padding)."""
    target, draft = vocab8_pair
    params = DecodeParams(gamma=3, temperature=1.0)
    static = StaticDecoder(target, min_capacity=16)
    counts = sampled_joint(target, ModelDrafter(draft), [3], params, 8, samples=STATIC_SAMPLES, static=static)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, 8))
    print(f"static, model draft: chi-square p-value {pvalue:.4g}")
    assert pvalue > 1e-3


def test_static_prompt_lookup_matches_exact_joint(vocab8_pair):
    target, _ = vocab8_pair
    params = DecodeParams(gamma=2, temperature=0.6, top_p=0.9)
    prompt = [3, 5, 2, 3]
    static = StaticDecoder(target, min_capacity=16)
    counts = sampled_joint(target, PromptLookupDrafter(), prompt, params, 8, samples=STATIC_SAMPLES, static=static)
    pvalue = chi_square_p(counts, exact_joint(target, prompt, params, 8))
    print(f"static, prompt lookup: chi-square p-value {pvalue:.4g}")
    assert pvalue > 1e-3


def compiled_matches(target, draft, gamma: int, backend: str) -> StaticDecoder:
    static = StaticDecoder(target, compile=True, backend=backend, min_capacity=64)
    drafter = ModelDrafter(draft)
    prompt = PROMPTS[1]
    assert signature(run(target, prompt, drafter, gamma, static)) == signature(run(target, prompt, drafter, gamma))
    assert static.compile_seconds > 0
    return static


def test_compiled_steps_match(vocab34_pair, close_draft):
    """torch.compile of the draft step and the verify trunk; aot_eager covers tracing and the functionalised
    in-place cache writes inductor builds on, in seconds (two shapes: draft step, verify of 2)."""
    compiled_matches(vocab34_pair[0], close_draft, 1, "aot_eager")


def test_warm_up_compiles_every_shape_first(vocab34_pair, close_draft):
    """Warm-up reports progress shape by shape; afterwards an answer compiles nothing more."""
    target = vocab34_pair[0]
    static = StaticDecoder(target, compile=True, backend="eager", min_capacity=64)
    drafter = ModelDrafter(close_draft)
    seen = []
    static.warm_up(drafter, 2, progress=lambda done, total, what: seen.append((done, total, what)))
    assert [s[0] for s in seen] == list(range(5)) and seen[-1][1] == 4  # verify 1, 2, 4 + draft step
    compiled = static.compile_seconds
    assert compiled > 0
    assert signature(run(target, PROMPTS[1], drafter, 2, static)) == signature(run(target, PROMPTS[1], drafter, 2))
    assert static.compile_seconds == compiled


@pytest.mark.slow
def test_inductor_compiled_steps_match(vocab34_pair, close_draft):
    """The real thing: inductor, mode reduce-overhead (CUDA graphs on a GPU; generated C++ on a CPU)."""
    compiled_matches(vocab34_pair[0], close_draft, 1, "inductor")
