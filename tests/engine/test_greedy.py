"""Greedy (temperature 0): speculative == target-only == transformers' generate, token for token."""

from __future__ import annotations

import pytest
import torch

from app.drafting.drafts import make_drafter
from app.engine import DecodeParams, ModelDrafter, PromptLookupDrafter, generate
from engine.helpers import GAMMAS, PROMPTS, greedy, reference


@pytest.mark.parametrize("prompt", PROMPTS, ids=["plain", "repetitive"])
def test_tiny_models_agree(vocab34_pair, prompt):
    target, draft = vocab34_pair
    prompt = torch.tensor(prompt)
    expected = reference(target, prompt, 24, stop=1)
    assert greedy(target, prompt, None, 1, 24, stop=1) == expected
    for drafter in (ModelDrafter(draft), PromptLookupDrafter()):
        for gamma in GAMMAS:
            assert greedy(target, prompt, drafter, gamma, 24, stop=1) == expected, (drafter.name, gamma)


def test_tiny_models_agree_up_to_eos(vocab34_pair):
    """EOS is a token greedy reaches mid-answer: every path stops right after it."""
    target, draft = vocab34_pair
    prompt = torch.tensor(PROMPTS[0])
    free = reference(target, prompt, 24, stop=1)
    eos = next(t for i, t in enumerate(free) if i >= 5 and t not in free[:i])
    expected = reference(target, prompt, 24, stop=eos)
    assert expected[-1] == eos and len(expected) < 24
    for drafter in (None, ModelDrafter(draft), PromptLookupDrafter()):
        for gamma in GAMMAS:
            result = generate(
                target, prompt, drafter, DecodeParams(gamma=gamma, temperature=0, max_new_tokens=24),
                stop_token_ids=(eos,),
            )
            assert result.token_ids == expected
            assert result.finished.reason == "eos"


CHATS = (  # an answer of its own, and one that copies the prompt (where lookup proposes)
    "Name three primary colours.",
    "Copy this list twice: apples, pears, plums, figs.",
)


@pytest.mark.slow
def test_default_model_agrees():
    """The embedded model in float32 with its bf16 self-draft (packed where that pays) and prompt lookup,
    ~32 new tokens per chat. (The model as loaded by default: tests/engine/test_packed.py.)"""
    from app.models import load_model

    target = load_model("default", device="cpu", dtype=torch.float32)
    drafters = (make_drafter("self", target), PromptLookupDrafter())
    stop = target.stop_token_ids[0]
    for chat in CHATS:
        prompt = target.encode_chat([{"role": "user", "content": chat}])
        expected = reference(target.model, prompt, 32, stop)
        assert greedy(target.model, prompt, None, 1, 32, stop) == expected, chat
        for drafter in drafters:
            for gamma in (2, 8) if drafter is drafters[0] else (4,):  # all four gammas run on tiny models
                got = greedy(target.model, prompt, drafter, gamma, 32, stop)
                assert got == expected, (chat, drafter.name, gamma)
