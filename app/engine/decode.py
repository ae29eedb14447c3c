"""Speculative decoding (Leviathan, Kalman & Matias 2023, Algorithm 1) as a generator of events.

Notation follows the paper: p is the target's distribution, q the draft's, gamma the
draft length. Target-only decoding is the same loop with no drafter, so both share the
transforms, the cache handling and the events.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel

from .drafters import Drafter
from .events import Event, FinishedEvent, RoundEvent, Status, TokenEvent, Top, TopEntries
from .kv import context_limit, forward, head, new_cache, rollback, splits_head, trunk
from .sampling import DecodeParams, fit_vocab, logits_to_probs, sample
from .text import StreamDetokenizer

RESIDUAL_EPS = 1e-6  # below this mass the residual is numerical noise (p ~ q): fall back to p
TOP_N = 5  # entries of p, q and the residual kept per drafted position and on corrected tokens


class ContextLengthError(ValueError):
    """The prompt leaves no room for even one new token within the model's context."""


class NonFiniteError(RuntimeError):
    """A model produced NaN or infinite logits: no token of that round can be trusted, none is emitted."""

    def __init__(self, which: str):
        super().__init__(
            f"the {which} model produced NaN or infinite values, so no token can be chosen; its weights may be "
            "damaged, or its dtype may overflow (try float32)"
        )


Cancel = Callable[[], bool] | threading.Event | None


@dataclass(slots=True)
class Verdict:
    """Outcome of one acceptance test, already on the host."""

    n_accepted: int
    next_token: int  # corrected (n < drafted) or bonus/target (n == drafted)
    p_x: list[float]  # p_i(x_i) per drafted position, then p(next_token) last
    q_x: list[float]  # q_i(x_i) per drafted position
    accept_prob: list[float]  # min(1, p_i(x_i) / q_i(x_i))
    overlap: list[float]  # sum_x min(p_i, q_i) per drafted position
    top: TopEntries | None
    u: list[float] = field(default_factory=list)  # the uniform draw per tested position: n accepted, then the rejected one
    top_p: list[Top] = field(default_factory=list)  # top entries of p_i per drafted position, then of p_{g+1}
    top_q: list[Top] = field(default_factory=list)  # top entries of q_i per drafted position
    next_top: Top = ()  # top entries of the distribution next_token was drawn from (residual, or p)


def verify(target: PreTrainedModel, cache, ids: torch.Tensor, draft_tokens: torch.Tensor, params, vocab_size):
    """One target pass over the uncached context plus all drafts: p [g + 1, V]."""
    fresh = torch.cat([ids[cache.get_seq_length() :], draft_tokens])
    logits = fit_vocab(forward(target, cache, fresh, keep=len(draft_tokens) + 1), vocab_size)
    return logits_to_probs(logits, params)


def verify_trunk(target: PreTrainedModel, cache, ids: torch.Tensor, draft_tokens: torch.Tensor) -> torch.Tensor:
    """The same target pass without the head: final-norm features [m, H] of every fresh position."""
    return trunk(target, cache, torch.cat([ids[cache.get_seq_length() :], draft_tokens]))


def head_probs(target: PreTrainedModel, hidden: torch.Tensor, params, vocab_size) -> torch.Tensor:
    """Features [..., H] -> p [..., V], the same transform as `verify`."""
    return logits_to_probs(fit_vocab(head(target, hidden), vocab_size), params)


def decide(p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, generator: torch.Generator, greedy: bool = False):
    """The acceptance rule on tensors, batched over any leading dims; `accept` is its one-sequence form.

    p [..., g + 1, V], q [..., g, V], x [..., g] with g >= 1 -> (n [...] leading acceptances,
    y [...] the corrected or bonus token, p_x [..., g], q_x [..., g], ratio [..., g], dist [..., V]
    the distribution y was drawn from, u [..., g] the uniform draws: position i passes when u_i < ratio_i).
    """
    g = x.shape[-1]
    p_x = p[..., :g, :].gather(-1, x.unsqueeze(-1)).squeeze(-1)
    q_x = q.gather(-1, x.unsqueeze(-1)).squeeze(-1)  # > 0 since x_i was drawn from q_i, guarded anyway
    ratio = (p_x / q_x.clamp_min(torch.finfo(q_x.dtype).tiny)).clamp_max(1.0)
    u = torch.rand(ratio.shape, generator=generator, device=p.device)
    n = (u < ratio).long().cumprod(-1).sum(-1)  # leading acceptances, as a tensor
    residual = (p[..., :g, :] - q).clamp_min(0.0)
    mass = residual.sum(-1, keepdim=True)
    residual = torch.where(mass > RESIDUAL_EPS, residual / mass.clamp_min(RESIDUAL_EPS), p[..., :g, :])
    # The residual at the first rejection, else p_{g+1} for the bonus token.
    rows = torch.cat([residual, p[..., g:, :]], dim=-2)
    dist = rows.gather(-2, n[..., None, None].expand(*n.shape, 1, rows.shape[-1])).squeeze(-2)
    return n, sample(dist, generator, greedy), p_x, q_x, ratio, dist, u


def accept(
    p: torch.Tensor, q: torch.Tensor, x: torch.Tensor, generator: torch.Generator, greedy: bool = False
) -> Verdict:
    """The acceptance rule. p [g + 1, V], q [g, V], x [g]. One host sync.

    greedy: p and q are one-hot, so every draw is the argmax (see `sample`).
    """
    g = len(x)
    if g == 0:
        y = sample(p[0], generator, greedy)
        host = torch.stack([y.float(), p[0, y], p.isfinite().all().float()]).tolist()
        if not host[2]:
            raise NonFiniteError("target")
        y_id = int(host[0])
        top_p = _tops(p[:1])
        return Verdict(0, y_id, [host[1]], [], [], [], None, [], top_p, [], top_p[0])
    n, y, p_x, q_x, ratio, dist, u = decide(p, q, x, generator, greedy)
    overlap = torch.minimum(p[:g], q).sum(-1)
    finite = torch.stack([p.isfinite().all(), q.isfinite().all()]).float()  # checked in the same sync
    host = torch.cat([torch.stack([n.float(), y.float(), p[n, y]]), finite]).tolist()
    if not host[3] or not host[4]:
        raise NonFiniteError("target" if not host[3] else "draft")
    n_acc, y_id = int(host[0]), int(host[1])
    # Top entries of every row in one topk and one transfer: p_1..p_{g+1}, q_1..q_g, dist.
    tops = _tops(torch.cat([p, q, dist[None]]))
    top_p, top_q, next_top = tops[: g + 1], tops[g + 1 : 2 * g + 1], tops[-1]
    top = TopEntries(top_p[n_acc], top_q[n_acc], next_top) if n_acc < g else None
    return Verdict(
        n_acc, y_id, p_x.tolist() + [host[2]], q_x.tolist(), ratio.tolist(), overlap.tolist(), top,
        u.tolist()[: n_acc + 1], top_p, top_q, next_top,
    )


def accept_lazy(
    p_row: Callable[[int], torch.Tensor], q: torch.Tensor, x: torch.Tensor, generator: torch.Generator,
    greedy: bool = False,
) -> Verdict:
    """`accept` with p computed row by row on demand (p_row(i) -> p_i [V]) and stopped at the first rejection.

    Draws the same random numbers in the same order as `accept` (all g uniforms first, then the
    token), so with one seed both make the same decisions and emit the same token. Only tested
    positions get p_x, ratio, overlap, u and top_p entries: position i is tested when 1..i-1 were accepted.
    """
    g = len(x)
    if g == 0:
        return accept(p_row(0).unsqueeze(0), q, x, generator, greedy)
    u = torch.rand((g,), generator=generator, device=q.device)  # as in decide(): one draw of g uniforms
    tiny = torch.finfo(q.dtype).tiny
    p_x, q_x, ratios, overlap, rows = [], [], [], [], []
    n, dist = g, None
    for i in range(g):
        p_i = p_row(i)  # [V]
        rows.append(p_i)
        pair = torch.stack([p_i[x[i]], q[i, x[i]]])
        ratio = (pair[0] / pair[1].clamp_min(tiny)).clamp_max(1.0)
        host = torch.stack([pair[0], pair[1], ratio, torch.minimum(p_i, q[i]).sum(), (u[i] < ratio).float(),
                            p_i.isfinite().all().float(), q[i].isfinite().all().float()])
        px, qx, r, ov, ok, p_ok, q_ok = host.tolist()
        if not p_ok or not q_ok:
            raise NonFiniteError("target" if not p_ok else "draft")
        p_x.append(px), q_x.append(qx), ratios.append(r), overlap.append(ov)
        if not ok:
            n = i
            residual = (p_i - q[i]).clamp_min(0.0)
            mass = residual.sum(-1, keepdim=True)
            dist = torch.where(mass > RESIDUAL_EPS, residual / mass.clamp_min(RESIDUAL_EPS), p_i)
            break
    if dist is None:
        dist = p_row(g)
        rows.append(dist)
    y = sample(dist, generator, greedy)
    host = torch.stack([y.float(), dist[y] if n == g else rows[n][y]]).tolist()
    tops = _tops(torch.cat([torch.stack(rows), q, dist[None]]))
    top_p, top_q, next_top = tops[: len(rows)], tops[len(rows) : len(rows) + g], tops[-1]
    top = TopEntries(top_p[n], top_q[n], next_top) if n < g else None
    return Verdict(
        n, int(host[0]), p_x + [host[1]], q_x, ratios, overlap, top, u.tolist()[: n + 1], top_p, top_q, next_top
    )


def _tops(rows: torch.Tensor) -> list[Top]:
    """rows [R, V] -> per row its TOP_N largest (token id, prob), zero-probability entries left out."""
    values, ids = torch.topk(rows, min(TOP_N, rows.shape[-1]), dim=-1)
    return [
        tuple((i, v) for i, v in zip(row_ids, row_values, strict=True) if v > 0)
        for row_ids, row_values in zip(ids.tolist(), values.tolist(), strict=True)
    ]


def speculative_step(
    target, cache, drafter: Drafter | None, ids, ids_list, gamma, params, vocab_size, generator,
    lazy_head: bool = False,
) -> tuple[list[int], Verdict, float, float]:
    """Draft, verify, accept, roll back. Returns (drafted ids, verdict, draft s, verify s).

    lazy_head: run the trunk once over all fresh tokens but apply the head row by row, stopping at
    the first rejection (exact; fewer head rows). A drafter with `wants_features` receives the
    target's features of the positions this round commits, and never those of rejected drafts.
    """
    t0 = time.perf_counter()
    if drafter is not None and gamma > 0:
        draft_tokens, q = drafter.draft(ids, ids_list, gamma, params, vocab_size)
        draft_tokens, q = draft_tokens.to(ids.device), q.to(ids.device)
        drafted = draft_tokens.tolist()
    else:
        draft_tokens = ids.new_empty(0)
        q = torch.empty(0, vocab_size, device=ids.device)
        drafted = []
    t1 = time.perf_counter()
    wants_features = getattr(drafter, "wants_features", False)
    start = cache.get_seq_length()
    if lazy_head or wants_features:
        hidden = verify_trunk(target, cache, ids, draft_tokens)  # [m, H]
        rows = hidden[-(len(drafted) + 1) :]
        if lazy_head:
            verdict = accept_lazy(
                lambda i: head_probs(target, rows[i], params, vocab_size), q, draft_tokens, generator, params.greedy
            )
        else:
            verdict = accept(head_probs(target, rows, params, vocab_size), q, draft_tokens, generator, params.greedy)
    else:
        p = verify(target, cache, ids, draft_tokens, params, vocab_size)
        verdict = accept(p, q, draft_tokens, generator, params.greedy)
    # Both caches keep the context plus the accepted drafts; the new token is fed next round.
    kept = len(ids_list) + verdict.n_accepted
    rollback(cache, kept)
    if drafter is not None:
        drafter.rollback(kept)
        if wants_features:
            drafter.observe(hidden[: kept - start], start)
    return drafted, verdict, t1 - t0, time.perf_counter() - t1


def _cancelled(cancel: Cancel) -> bool:
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event):
        return cancel.is_set()
    return bool(cancel())


def decode(
    target: PreTrainedModel,
    input_ids: torch.Tensor,
    drafter: Drafter | None = None,
    params: DecodeParams | Callable[[], DecodeParams] = DecodeParams(),
    *,
    stop_token_ids: tuple[int, ...] | list[int] = (),
    vocab_size: int | None = None,
    tokenizer=None,
    cancel: Cancel = None,
    static=None,
    lazy_head: bool = False,
) -> Iterator[Event]:
    """Generate after input_ids [L] or [1, L], yielding TokenEvent / RoundEvent, then FinishedEvent.

    With drafter=None this is plain autoregressive decoding of the target. `params` may be a
    callable, read at the start of every round, so live controls apply at the next round.
    static: a `static.StaticDecoder` runs the rounds on static caches (same events, one sync a round);
    a feature draft always runs on the dynamic path, which hands it the target's features.
    lazy_head: head rows applied only up to the first rejection (exact, cheaper on a CPU); the round's
    overlap, u and top_p then cover the tested positions only.
    """
    read_params = params if callable(params) else (lambda: params)
    first = read_params()
    device = next(target.parameters()).device
    ids = input_ids.reshape(-1).to(device)
    ids_list = ids.tolist()
    prompt_len = len(ids_list)
    limit = context_limit(target)
    if limit is not None and prompt_len >= limit:
        raise ContextLengthError(
            f"the prompt has {prompt_len} tokens but the model's context holds {limit}; shorten it"
        )
    vocab_size = vocab_size or target.config.get_text_config().vocab_size  # logits width
    if getattr(drafter, "wants_features", False):
        if not splits_head(target):
            raise ValueError("this target's logits are not a plain head over its features; a feature draft cannot run")
        static = None
    lazy_head = lazy_head and drafter is not None and splits_head(target)
    stops = set(stop_token_ids)
    seed = first.seed if first.seed is not None else int.from_bytes(os.urandom(4), "little")
    generator = torch.Generator(device=device).manual_seed(seed)
    if drafter is not None:
        if hasattr(drafter, "seed"):
            # Drawn from the main stream, not seed + 1, so runs with nearby seeds stay independent.
            drafter.seed(int(torch.randint(2**62, (), generator=generator, device=device)))
        drafter.begin()
    session = static.begin(ids_list, drafter, generator, first.max_new_tokens) if static is not None else None
    cache = new_cache(target) if session is None else None
    detok = StreamDetokenizer(tokenizer) if tokenizer is not None else None
    out: list[int] = []
    round_index = 0
    reason = "length"
    start = time.perf_counter()
    while True:
        if _cancelled(cancel):
            reason = "cancelled"
            break
        params = read_params()
        remaining = params.max_new_tokens - len(out)
        if remaining <= 0:
            reason = "length"
            break
        room = (limit - len(ids_list)) if limit is not None else remaining + params.gamma
        if room <= 0:
            reason = "context"
            break
        gamma = min(params.gamma, remaining, room - 1) if drafter is not None else 0
        if session is not None:
            drafted, v, t_draft, t_verify = session.step(ids_list, gamma, params, vocab_size)
        else:
            drafted, v, t_draft, t_verify = speculative_step(
                target, cache, drafter, ids, ids_list, gamma, params, vocab_size, generator, lazy_head
            )
        n = v.n_accepted
        # Emit accepted drafts then the new token; stop at EOS or the length limit.
        emitted = drafted[:n] + [v.next_token]
        cut = min(len(emitted), remaining)
        for i, tok in enumerate(emitted[:cut]):
            if tok in stops:
                cut = i + 1
                reason = "eos"
                break
        for i in range(min(n, cut)):
            yield TokenEvent(
                drafted[i], Status.ACCEPTED, round_index, i, v.p_x[i], v.q_x[i], v.accept_prob[i],
                _piece(detok, drafted[i]), u=v.u[i],
            )
        if n < len(drafted) and cut > n:
            yield TokenEvent(
                drafted[n], Status.REJECTED, round_index, n, v.p_x[n], v.q_x[n], v.accept_prob[n],
                tokenizer.decode([drafted[n]]) if tokenizer is not None else "", u=v.u[n],
            )
        if cut > n:
            status = Status.CORRECTED if n < len(drafted) else (Status.BONUS if drafted else Status.TARGET)
            yield TokenEvent(
                v.next_token, status, round_index, n, v.p_x[-1], None, None,
                _piece(detok, v.next_token), v.top,
            )
        new = emitted[:cut]
        out.extend(new)
        ids_list.extend(new)
        if session is None:  # the static path keeps its tokens on the device
            ids = torch.cat([ids, torch.tensor(new, dtype=ids.dtype, device=device)])
        yield RoundEvent(
            round_index, gamma, len(drafted), n, cut, bool(drafted) and n == len(drafted) and cut > n,
            tuple(v.overlap), t_draft, t_verify, tuple(drafted), tuple(v.u), tuple(v.accept_prob),
            tuple(v.p_x[: len(drafted)]), tuple(v.q_x), tuple(v.top_p), tuple(v.top_q), v.next_token, v.next_top,
        )
        round_index += 1
        if reason == "eos":
            break
    yield FinishedEvent(reason, prompt_len, len(out), round_index, time.perf_counter() - start, tuple(out))


def _piece(detok: StreamDetokenizer | None, token_id: int) -> str:
    return detok.push(token_id) if detok is not None else ""
