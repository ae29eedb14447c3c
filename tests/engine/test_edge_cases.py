"""Traps the seeds call out: EOS in the draft, the length limit, the context limit, cancel, live params."""

from __future__ import annotations

import threading

import pytest
import torch
from tiny_models import tiny_model

from app.engine import (
    ContextLengthError,
    DecodeParams,
    FinishedEvent,
    ModelDrafter,
    RoundEvent,
    decode,
    generate,
)

PROMPT = torch.tensor([5, 9, 12])


def exact_drafter(target) -> ModelDrafter:
    """The target drafting for itself: under greedy every draft is accepted, so rounds are full."""
    return ModelDrafter(target)


def test_eos_inside_the_draft_stops_there(vocab34_pair):
    target, _ = vocab34_pair
    free = generate(target, PROMPT, None, DecodeParams(temperature=0, max_new_tokens=12)).token_ids
    eos = next(t for i, t in enumerate(free) if i >= 2 and t not in free[:i])
    result = generate(
        target, PROMPT, exact_drafter(target), DecodeParams(gamma=8, temperature=0, max_new_tokens=12),
        stop_token_ids=(eos,),
    )
    assert result.token_ids == free[: free.index(eos) + 1]
    assert result.finished.reason == "eos"
    assert free.index(eos) < 8 and len(result.rounds) == 1  # EOS was one of the 8 drafts of round 0
    assert result.rounds[0].accepted == 8 and result.rounds[0].emitted == free.index(eos) + 1


@pytest.mark.parametrize("max_new", range(1, 11))
def test_length_limit_truncates_inside_a_round(vocab34_pair, max_new):
    target, _ = vocab34_pair
    result = generate(
        target, PROMPT, exact_drafter(target), DecodeParams(gamma=4, temperature=0, max_new_tokens=max_new)
    )
    assert len(result.token_ids) == max_new == result.finished.new_tokens
    assert result.finished.reason == "length"
    assert sum(r.emitted for r in result.rounds) == max_new


def test_prompt_filling_the_context_is_refused():
    target = tiny_model(max_positions=16)
    with pytest.raises(ContextLengthError, match="16 tokens"):
        next(decode(target, torch.arange(3, 19), None, DecodeParams()))


@pytest.mark.parametrize("drafter", [False, True], ids=["target-only", "speculative"])
def test_generation_ends_when_the_context_is_full(drafter):
    target = tiny_model(max_positions=16)
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=100)
    result = generate(target, torch.arange(3, 13), exact_drafter(target) if drafter else None, params)
    assert result.finished.reason == "context"
    assert 10 + len(result.token_ids) == 16  # filled exactly, never past


def test_cancel_between_rounds(vocab34_pair):
    target, draft = vocab34_pair
    stop = threading.Event()
    events = []
    for event in decode(target, PROMPT, ModelDrafter(draft), DecodeParams(gamma=3, max_new_tokens=50, seed=0),
                        cancel=stop):
        events.append(event)
        if isinstance(event, RoundEvent) and event.round == 1:
            stop.set()
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    assert finished.reason == "cancelled" and finished.rounds == 2
    assert finished.new_tokens == sum(e.emitted for e in events if isinstance(e, RoundEvent))


def test_live_params_apply_at_the_next_round(vocab34_pair):
    target, draft = vocab34_pair
    rounds_seen = []

    def params():
        return DecodeParams(gamma=2 if len(rounds_seen) < 3 else 5, max_new_tokens=40, seed=0)

    for event in decode(target, PROMPT, ModelDrafter(draft), params):
        if isinstance(event, RoundEvent):
            rounds_seen.append(event.gamma)
    assert rounds_seen[:3] == [2, 2, 2]
    assert rounds_seen[3] == 5
