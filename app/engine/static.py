"""Speculative rounds on static caches with exactly one host sync per round (opt-in; see static_kv).

The round is the one `decode` runs, in the same order of random draws, with these differences:
- every token lives in a device buffer `ctx` [capacity], so no round copies ids from the host;
- the draft is fed one token per step, verify gets gamma + 1 tokens padded to a fixed size,
  the padding being whatever `ctx` holds after the real tokens (masked by position, never kept);
- drafts, the verdict and the top entries come back in one packed transfer: the round's only sync;
- draft and verify times come from CUDA events on a GPU (wall clock elsewhere), so timing adds
  no sync either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import torch
from transformers import PreTrainedModel

from .decode import TOP_N, Verdict, decide
from .drafters import ModelDrafter, PromptLookupDrafter
from .events import Top, TopEntries
from .kv import context_limit
from .sampling import DecodeParams, fit_vocab, logits_to_probs, sample
from .static_kv import MIN_CAPACITY, PAD_SLACK, StaticModel, static_support, verify_size

Progress = Callable[[int, int, str], None]  # (done, total, what) during warm-up
WARM_CALLS = 3  # CUDA graph trees: a warm-up run, the capture, then one replay


class StaticDecoder:
    """Static caches (and compiled steps) for a target and its draft models, kept across generations.

    Pass it to `decode(..., static=...)`; the first generation, or `warm_up`, pays for compiling.
    """

    def __init__(self, target: PreTrainedModel, compile: bool = False, backend: str = "inductor",
                 min_capacity: int = MIN_CAPACITY) -> None:
        reason = static_support(target)
        if reason is not None:
            raise ValueError(reason)
        self.target = target
        self.compile = compile
        self.options = {"compile": compile, "backend": backend, "min_capacity": min_capacity}
        self.device = next(target.parameters()).device
        self._models: dict[int, StaticModel] = {}

    def model(self, model: PreTrainedModel, capacity: int) -> StaticModel:
        sm = self._models.get(id(model))
        if sm is None or sm.model is not model:
            if next(model.parameters()).device != self.device:
                raise ValueError("the static cache needs the draft model on the target's device")
            sm = self._models[id(model)] = StaticModel(model, capacity, **self.options)
        else:
            sm.resize(capacity)
        return sm

    @property
    def compile_seconds(self) -> float:
        return sum(sm.compile_seconds for sm in self._models.values())

    def supports(self, drafter) -> str | None:
        """None when `drafter` can run on the static path, else a one-line reason."""
        if drafter is None or isinstance(drafter, PromptLookupDrafter):
            return None
        if type(drafter) is ModelDrafter:
            return static_support(drafter.model)
        return f"the static cache does not support the {drafter.name} drafter yet"

    def begin(self, prompt: list[int], drafter, generator: torch.Generator, max_new_tokens: int) -> StaticSession:
        reason = self.supports(drafter)
        if reason is not None:
            raise ValueError(reason)
        return StaticSession(self, prompt, drafter, generator, len(prompt) + max_new_tokens)

    def warm_up(self, drafter=None, gammas: int | Iterable[int] = 4, progress: Progress | None = None) -> float:
        """Run every step shape the given gammas need (an int: every gamma up to it) on a dummy prompt;
        returns seconds. With compile this is where the compiling happens (shown through `progress`).
        """
        start = time.perf_counter()
        gammas = range(1, gammas + 1) if isinstance(gammas, int) else gammas
        sizes = sorted({1} | {verify_size(g + 1) for g in gammas})  # 1: target-only rounds
        draft = drafter.model if type(drafter) is ModelDrafter else None
        total = len(sizes) + (draft is not None)
        prompt = [0] * 4
        session = self.begin(prompt, drafter, torch.Generator(device=self.device), sizes[-1] + 4)
        for done, size in enumerate(sizes):
            if progress:
                progress(done, total, f"verify step, {size} tokens")
            for _ in range(WARM_CALLS):
                session.target.verify(session.ctx[3 : 3 + size], 3, 1)
        if draft is not None:
            if progress:
                progress(len(sizes), total, "draft step")
            for _ in range(WARM_CALLS):
                session.draft.step(session.ctx[3:4], 3)
        _sync(self.device)
        if progress:
            progress(total, total, "ready")
        return time.perf_counter() - start


class StaticSession:
    """One generation's state: the token buffer, how far the draft cache is valid, the clock."""

    def __init__(self, decoder: StaticDecoder, prompt: list[int], drafter, generator, needed: int) -> None:
        device = decoder.device
        limit = context_limit(decoder.target)
        capacity = min(needed, limit) if limit else needed
        self.target = decoder.model(decoder.target, capacity)
        self.draft = None
        if type(drafter) is ModelDrafter:
            self.draft = decoder.model(drafter.model, self.target.capacity)
            self.target.resize(self.draft.capacity)  # one capacity for both: the draft may have grown before
        self.decoder, self.drafter, self.generator, self.device = decoder, drafter, generator, device
        self.ctx = torch.zeros(self.target.capacity + PAD_SLACK, dtype=torch.long, device=device)
        self.ctx[: len(prompt)] = torch.tensor(prompt, dtype=torch.long)
        n = len(prompt)
        self.target.prefill(self.ctx[: n - 1])
        self.draft_held = 0  # draft cache positions that hold the context
        if self.draft is not None:
            self.draft.prefill(self.ctx[: n - 1])
            self.draft_held = n - 1
        self.clock = _Clock(device)

    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int):
        """Draft, verify, accept; returns what `speculative_step` does: (drafted, verdict, draft s, verify s)."""
        n_ctx = len(ids_list)
        self._ensure(n_ctx + verify_size(gamma + 1))
        self.clock.start()
        x, q = self._draft(ids_list, gamma, params, vocab_size)
        g = len(x)
        self.clock.mark()
        last = n_ctx - 1  # the newest context token is fed again, with the drafts, at its position
        logits = self.target.verify(self.ctx[last : last + verify_size(g + 1)], last, g + 1)
        p = logits_to_probs(fit_vocab(logits, vocab_size), params)  # [g + 1, V]
        verdict, drafted = self._accept(p, q, x, n_ctx, params.greedy)
        draft_s, verify_s = self.clock.spans()
        if self.draft is not None:
            self.draft_held = min(self.draft_held, n_ctx + verdict.n_accepted)
        return drafted, verdict, draft_s, verify_s

    def _ensure(self, needed: int) -> None:
        """Grow the buffers when live parameters ask for more room than the generation began with."""
        if needed <= min(self.target.capacity, self.draft.capacity if self.draft else self.target.capacity):
            return
        self.target.grow(needed)
        if self.draft is not None:
            self.draft.grow(needed)
        ctx = torch.zeros(self.target.capacity + PAD_SLACK, dtype=torch.long, device=self.device)
        ctx[: len(self.ctx)] = self.ctx
        self.ctx = ctx

    def _draft(self, ids_list, gamma, params, vocab_size) -> tuple[torch.Tensor, torch.Tensor]:
        """-> x [g] (a copy of ctx[n:n + g]) and q [g, V] float32, without a sync."""
        n_ctx = len(ids_list)
        if self.drafter is None or gamma == 0:
            return self.ctx[:0], torch.empty(0, vocab_size, device=self.device)
        if self.draft is None:  # prompt lookup: the proposal is host data; one-hot q
            proposal = self.drafter.propose(ids_list, gamma)
            g = len(proposal)
            if g:
                host = torch.tensor(proposal, dtype=torch.long)
                if self.device.type == "cuda":
                    host = host.pin_memory()
                self.ctx[n_ctx : n_ctx + g].copy_(host, non_blocking=True)  # no wait on the device
            x = self.ctx[n_ctx : n_ctx + g].clone()
            q = torch.zeros(g, vocab_size, dtype=torch.float32, device=self.device)
            return x, q.scatter_(-1, x[:, None], 1.0)
        for pos in range(self.draft_held, n_ctx - 1):  # catch up: the last accepted draft after a full accept
            self.draft.step(self.ctx[pos : pos + 1], pos)
        qs = []
        for pos in range(n_ctx - 1, n_ctx - 1 + gamma):
            logits = self.draft.step(self.ctx[pos : pos + 1], pos)
            q_i = logits_to_probs(fit_vocab(logits, vocab_size), params)  # [V]
            x_i = sample(q_i, self.drafter.generator, params.greedy)  # []
            self.ctx[pos + 1 : pos + 2].copy_(x_i.view(1))
            qs.append(q_i)
        self.draft_held = n_ctx + gamma - 1  # x_gamma itself was never fed
        return self.ctx[n_ctx : n_ctx + gamma].clone(), torch.stack(qs)

    def _accept(self, p, q, x, n_ctx: int, greedy: bool) -> tuple[Verdict, list[int]]:
        """`decode.accept` (the rule is decode.decide) with everything the events need in one transfer."""
        g = len(x)
        k = min(TOP_N, p.shape[-1])
        if g == 0:
            y = sample(p[0], self.generator, greedy)
            self.ctx[n_ctx : n_ctx + 1].copy_(y.view(1))
            top = torch.topk(p[:1], k, dim=-1)
            packed = torch.cat([y.float().view(1), p[0].gather(0, y.view(1)), top.indices.float().view(-1),
                                top.values.view(-1)])
            self.clock.mark()
            host = packed.tolist()  # the round's one host sync
            top_p = _tops(host[2:], 1, k)
            return Verdict(0, int(host[0]), [host[1]], [], [], [], None, [], top_p, [], top_p[0]), []
        n, y, p_x, q_x, ratio, dist, u = decide(p, q, x, self.generator, greedy)
        overlap = torch.minimum(p[:g], q).sum(-1)
        p_y = p.reshape(-1).gather(0, (n * p.shape[-1] + y).view(1))
        top = torch.topk(torch.cat([p, q, dist[None]]), k, dim=-1)  # rows p_1..p_{g+1}, q_1..q_g, dist
        parts = [x.float(), n.float().view(1), y.float().view(1), p_y, p_x, q_x, ratio, overlap, u]
        packed = torch.cat(parts + [top.indices.float().view(-1), top.values.view(-1)])
        self.ctx.index_copy_(0, (n + n_ctx).view(1), y.view(1))  # the new token, after the accepted drafts
        self.clock.mark()
        host = packed.tolist()  # the round's one host sync
        drafted = [int(t) for t in host[:g]]
        n_acc, y_id, p_y_host = int(host[g]), int(host[g + 1]), host[g + 2]
        p_x_h, q_x_h, ratio_h, overlap_h, u_h = (host[g + 3 + j * g : g + 3 + (j + 1) * g] for j in range(5))
        tops = _tops(host[6 * g + 3 :], 2 * g + 2, k)
        top_p, top_q, next_top = tops[: g + 1], tops[g + 1 : 2 * g + 1], tops[-1]
        entries = TopEntries(top_p[n_acc], top_q[n_acc], next_top) if n_acc < g else None
        verdict = Verdict(n_acc, y_id, p_x_h + [p_y_host], q_x_h, ratio_h, overlap_h, entries, u_h[: n_acc + 1],
                          top_p, top_q, next_top)
        return verdict, drafted


def _tops(host: list[float], rows: int, k: int) -> list[Top]:
    """Flat topk ids then values for `rows` rows -> per row (token id, prob), zero-probability entries left out."""
    ids, values = host[: rows * k], host[rows * k : 2 * rows * k]
    return [
        tuple((int(i), v) for i, v in zip(ids[r * k : (r + 1) * k], values[r * k : (r + 1) * k], strict=True) if v > 0)
        for r in range(rows)
    ]


class _Clock:
    """Draft and verify spans: CUDA events on a GPU (read after the round's sync), else the wall clock."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if self.cuda else []
        self.times: list[float] = []

    def start(self) -> None:
        self.times = []
        self.mark()

    def mark(self) -> None:
        if self.cuda:
            self.events[len(self.times)].record()
            self.times.append(0.0)
        else:
            self.times.append(time.perf_counter())

    def spans(self) -> tuple[float, float]:
        if self.cuda:  # the events completed before the packed transfer returned
            return self.events[0].elapsed_time(self.events[1]) / 1e3, self.events[1].elapsed_time(self.events[2]) / 1e3
        t = self.times
        return t[1] - t[0], time.perf_counter() - t[1]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
