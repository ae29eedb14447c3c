"""A model that produces NaN (or +inf) logits: a clear error, no hang, and not one token emitted from it."""

from __future__ import annotations

import pytest
import torch
from tiny_models import noisy_copy, tiny_model

from app.engine import DecodeParams, ModelDrafter, NonFiniteError, PromptLookupDrafter, TokenEvent, decode

PROMPT = torch.tensor([5, 9, 12, 5, 9])
SETTINGS = [DecodeParams(gamma=3, temperature=0, max_new_tokens=12, seed=0),
            DecodeParams(gamma=3, temperature=1.0, max_new_tokens=12, seed=0),
            DecodeParams(gamma=3, temperature=0.7, top_k=5, top_p=0.9, max_new_tokens=12, seed=0)]


def broken(model, value=float("nan")):
    """The same model with one lm_head row poisoned: every position's logits get a NaN/inf entry."""
    model = noisy_copy(model, 0.0)
    with torch.no_grad():
        model.lm_head.weight[7].fill_(value)
    return model


def emitted_before_error(target, drafter, params) -> list[TokenEvent]:
    tokens = []
    with pytest.raises(NonFiniteError) as info:
        for event in decode(target, PROMPT, drafter, params):
            if isinstance(event, TokenEvent):
                tokens.append(event)
    return tokens, str(info.value)


@pytest.fixture(scope="module")
def healthy():
    return tiny_model()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("params", SETTINGS, ids=["greedy", "T1", "topk-topp"])
@pytest.mark.parametrize("draft", ["none", "model", "prompt-lookup"])
def test_a_nan_target_stops_at_its_first_round_with_a_clear_error(healthy, params, draft):
    target = broken(healthy)
    drafter = {"none": None, "model": ModelDrafter(noisy_copy(healthy, 0.5)),
               "prompt-lookup": PromptLookupDrafter()}[draft]
    tokens, message = emitted_before_error(target, drafter, params)
    assert tokens == []
    assert message.startswith("the target model produced NaN or infinite values")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("params", SETTINGS, ids=["greedy", "T1", "topk-topp"])
def test_a_nan_draft_is_caught_before_its_tokens_are_used(healthy, params):
    tokens, message = emitted_before_error(healthy, ModelDrafter(broken(healthy)), params)
    assert tokens == [] and message.startswith("the draft model produced NaN")


@pytest.mark.timeout(120)
def test_positive_infinity_is_caught_too(healthy):
    tokens, message = emitted_before_error(broken(healthy, float("inf")), None, SETTINGS[1])
    assert tokens == [] and "NaN or infinite" in message
