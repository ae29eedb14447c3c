"""`decode`: speculative decoding (Leviathan, Kalman & Matias 2023, Algorithm 1) as a generator of events.

Notation follows the paper: p is the target's distribution, q the draft's, gamma the draft length.
The loop asks a round runner (runner.py) for rounds and turns each into events; it knows no drafter
or cache kind. Target-only decoding is the same loop with no drafter, so both share the transforms,
the cache handling and the events.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from .events import Event, FinishedEvent, RoundEvent, Status, TokenEvent
from .kv import backend_for
from .params import DecodeParams
from .runner import begin_runner
from .text import StreamDetokenizer

if TYPE_CHECKING:
    from .protocols import AnyDrafter
    from .static import StaticDecoder


class ContextLengthError(ValueError):
    """The prompt leaves no room for even one new token within the model's context."""


Cancel = Callable[[], bool] | threading.Event | None


def _cancelled(cancel: Cancel) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


def decode(
    target: Any,
    input_ids: torch.Tensor,
    drafter: AnyDrafter | None = None,
    params: DecodeParams | Callable[[], DecodeParams] = DecodeParams(),
    *,
    stop_token_ids: tuple[int, ...] | list[int] = (),
    vocab_size: int | None = None,
    tokenizer=None,
    cancel: Cancel = None,
    static: StaticDecoder | None = None,
) -> Iterator[Event]:
    """Generate after input_ids [L] or [1, L], yielding TokenEvent / RoundEvent, then FinishedEvent.

    With drafter=None this is plain autoregressive decoding of the target. `params` may be a
    callable, read at the start of every round, so live controls apply at the next round.
    static: a `static.StaticDecoder` runs the rounds on static caches (same events, one sync a round);
    a drafter without a static form is refused there with its one-line reason (protocols.Unsupported, a
    ValueError).
    """
    fixed = params
    read_params: Callable[[], DecodeParams] = fixed if callable(fixed) else (lambda: fixed)
    first = read_params()
    backend = backend_for(target)
    device = backend.device
    ids_list = input_ids.reshape(-1).tolist()
    prompt_len = len(ids_list)
    limit = backend.context_limit()
    if limit is not None and prompt_len >= limit:
        raise ContextLengthError(
            f"the prompt has {prompt_len} tokens but the model's context holds {limit}; shorten it"
        )
    vocab_size = vocab_size or target.config.get_text_config().vocab_size  # logits width
    stops = set(stop_token_ids)
    seed = first.seed if first.seed is not None else int.from_bytes(os.urandom(4), "little")
    generator = torch.Generator(device=device).manual_seed(seed)
    if drafter is not None:
        # Drawn from the main stream, not seed + 1, so runs with nearby seeds stay independent.
        drafter.seed(int(torch.randint(2**62, (), generator=generator, device=device)))
        drafter.begin()
    rounds = begin_runner(target, ids_list, drafter, generator, first.max_new_tokens, static)
    detok = StreamDetokenizer(tokenizer) if tokenizer is not None else None
    out: list[int] = []
    round_index = 0
    reason = "length"
    start = time.perf_counter()
    while True:
        if _cancelled(cancel):
            reason = "cancelled"
            break
        now = read_params()
        remaining = now.max_new_tokens - len(out)
        if remaining <= 0:
            reason = "length"
            break
        room = (limit - len(ids_list)) if limit is not None else remaining + now.gamma
        if room <= 0:
            reason = "context"
            break
        gamma = min(now.gamma, remaining, room - 1) if drafter is not None else 0
        played = rounds.step(ids_list, gamma, now, vocab_size)
        v = played.verdict
        drafted, n = v.drafts, v.n_accepted
        # Emit accepted drafts then the new token; stop at EOS or the length limit.
        emitted = [*drafted[:n], v.next_token]
        cut = min(len(emitted), remaining)
        for i, tok in enumerate(emitted[:cut]):
            if tok in stops:
                cut = i + 1
                reason = "eos"
                break
        # The answer's last token also carries what the detokenizer still holds (a character cut off by the
        # length limit), so the streamed text equals the decode of the whole answer.
        last = reason == "eos" or cut >= remaining or (limit is not None and len(ids_list) + cut >= limit)
        for i in range(min(n, cut)):
            yield TokenEvent(
                token_id=drafted[i], status=Status.ACCEPTED, round=round_index, position=i, p=v.p_x[i],
                q=v.q_x[i], accept_prob=v.accept_prob[i], text=_piece(detok, drafted[i], last and i == cut - 1),
                u=v.u[i], node=v.node(i),
            )
        if n < len(drafted) and cut > n:
            yield TokenEvent(
                token_id=drafted[n], status=Status.REJECTED, round=round_index, position=n, p=v.p_x[n],
                q=v.q_x[n], accept_prob=v.accept_prob[n],
                text=tokenizer.decode([drafted[n]]) if tokenizer is not None else "", u=v.u[n], node=v.node(n),
            )
        if cut > n:
            status = Status.CORRECTED if n < len(drafted) else (Status.BONUS if drafted else Status.TARGET)
            yield TokenEvent(
                token_id=v.next_token, status=status, round=round_index, position=n, p=v.p_y, q=None,
                accept_prob=None, text=_piece(detok, v.next_token, last), top=v.top,
            )
        new = emitted[:cut]
        context = len(ids_list)
        out.extend(new)
        ids_list.extend(new)
        yield RoundEvent(
            round=round_index, gamma=gamma, drafted=len(drafted), accepted=n, emitted=cut,
            bonus=bool(drafted) and n == len(drafted) and cut > n, overlap=v.overlap, draft_time=played.draft_s,
            verify_time=played.verify_s, context=context, drafts=drafted, u=v.u, accept_prob=v.accept_prob, p_x=v.p_x, q_x=v.q_x,
            top_p=v.top_p, top_q=v.top_q, next_token=v.next_token, next_top=v.next_top, **played.extra,
        )
        round_index += 1
        if reason == "eos":
            break
    yield FinishedEvent(
        reason=reason, prompt_tokens=prompt_len, new_tokens=len(out), rounds=round_index,
        elapsed=time.perf_counter() - start, token_ids=tuple(out),
    )


def _piece(detok: StreamDetokenizer | None, token_id: int, last: bool = False) -> str:
    if detok is None:
        return ""
    text = detok.push(token_id)
    return text + detok.flush() if last else text
