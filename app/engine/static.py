"""Speculative rounds on static caches with exactly one host sync per round (opt-in; see static_kv).

The round is the one `DynamicRounds` runs, in the same order of random draws, with these differences:
- every token lives in a device buffer `ctx` [capacity], so no round copies ids from the host;
- the drafter drafts through its static form (`Drafter.static_form`), fed one token per step; verify
  gets gamma + 1 tokens padded to a fixed size, the padding being whatever `ctx` holds after the real
  tokens (masked by position, never kept);
- drafts, the verdict and the top entries come back in `accept`'s one packed transfer;
- draft and verify times come from CUDA events on a GPU (wall clock elsewhere), so timing adds
  no sync either.
A static form names its runner (`StaticDraft.runner`): StaticRounds for a chain, and for a token tree
static_tree.StaticTreeRounds, which keeps these buffers and this clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

import torch
from transformers import PreTrainedModel

from .acceptance import accept
from .kv import context_limit, sync
from .rounds import Round
from .sampling import DecodeParams, fit_vocab, logits_to_probs
from .static_kv import MIN_CAPACITY, PAD_SLACK, StaticModel, static_support, verify_size

if TYPE_CHECKING:
    from .drafters import Drafter

Progress = Callable[[int, int, str], None]  # (done, total, what) during warm-up
WARM_CALLS = 3  # CUDA graph trees: a warm-up run, the capture, then one replay


class StaticDraft(Protocol):
    """A drafter's form on static caches (from `Drafter.static_form`): it drafts without a host sync."""

    models: tuple[PreTrainedModel, ...]  # draft models that need a static cache of their own (may be empty)
    runner: type[StaticRounds]  # its rounds: StaticRounds for a chain (static_tree.StaticTreeRounds for a tree)

    def begin(self, rounds: StaticRounds, prompt_len: int) -> None:
        """The prompt is in rounds.ctx and every cache is allocated: prefill what the draft holds."""

    def draft(self, rounds: StaticRounds, ids_list: list[int], gamma: int, params: DecodeParams,
              vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """-> x [g] long and q [g, V] float32 on the device, g <= gamma."""

    def commit(self, kept: int) -> None:
        """The first `kept` positions are final."""


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

    def form(self, drafter: Drafter | None) -> StaticDraft | str | None:
        """The drafter's static form, a one-line reason it has none, or None for target-only rounds."""
        return drafter.static_form(self) if drafter is not None else None

    def supports(self, drafter: Drafter | None) -> str | None:
        """None when `drafter` can run on the static path, else a one-line reason."""
        form = self.form(drafter)
        return form if isinstance(form, str) else None

    def begin(self, prompt: list[int], drafter: Drafter | None, generator: torch.Generator,
              max_new_tokens: int) -> StaticRounds:
        form = self.form(drafter)
        if isinstance(form, str):
            raise ValueError(form)
        runner = form.runner if form is not None else StaticRounds
        return runner(self, prompt, form, generator, len(prompt) + max_new_tokens)

    def warm_up(self, drafter: Drafter | None = None, gammas: int | Iterable[int] = 4,
                progress: Progress | None = None) -> float:
        """Run every step shape the given gammas need (an int: every gamma up to it) on a dummy prompt;
        returns seconds. With compile this is where the compiling happens (shown through `progress`).
        """
        start = time.perf_counter()
        gammas = range(1, gammas + 1) if isinstance(gammas, int) else gammas
        form = self.form(drafter)
        runner = form.runner if form is not None and not isinstance(form, str) else StaticRounds
        sizes = runner.verify_sizes(drafter, gammas)
        prompt = [0] * 4
        rounds = self.begin(prompt, drafter, torch.Generator(device=self.device), sizes[-1] + 4)
        drafts = [rounds.static_model(m) for m in rounds.form.models] if rounds.form is not None else []
        total = len(sizes) + len(drafts)
        for done, size in enumerate(sizes):
            if progress:
                progress(done, total, f"verify step, {size} tokens")
            for _ in range(WARM_CALLS):
                rounds.warm_verify(size)
        for done, draft in enumerate(drafts, len(sizes)):
            if progress:
                progress(done, total, "draft step")
            for _ in range(WARM_CALLS):
                draft.step(rounds.ctx[3:4], 3)
        sync(self.device)
        if progress:
            progress(total, total, "ready")
        return time.perf_counter() - start


class StaticRounds:
    """One generation's rounds on static caches: the token buffer, the caches of one capacity, the clock."""

    def __init__(self, decoder: StaticDecoder, prompt: list[int], form: StaticDraft | None,
                 generator: torch.Generator, needed: int) -> None:
        self.decoder, self.form, self.generator, self.device = decoder, form, generator, decoder.device
        limit = context_limit(decoder.target)
        capacity = min(needed, limit) if limit else needed
        self.target = decoder.model(decoder.target, capacity)
        self.models = [self.target]
        for model in form.models if form is not None else ():
            draft = decoder.model(model, self.target.capacity)
            self.target.resize(draft.capacity)  # one capacity for all: a draft may have grown before
            self.models.append(draft)
        self.ctx = torch.zeros(self.target.capacity + PAD_SLACK, dtype=torch.long, device=self.device)
        self.ctx[: len(prompt)] = torch.tensor(prompt, dtype=torch.long)
        self.prefill(len(prompt))
        if form is not None:
            form.begin(self, len(prompt))
        self.clock = _Clock(self.device)

    @staticmethod
    def verify_sizes(drafter: Drafter | None, gammas: Iterable[int]) -> list[int]:
        """The padded verify sizes rounds at these gammas use (what warm-up runs once each)."""
        return sorted({1} | {verify_size(g + 1) for g in gammas})  # 1: target-only rounds

    def warm_verify(self, size: int) -> None:
        """One verify pass of `size` tokens on the dummy context (warm-up: its shape compiles here)."""
        self.target.verify(self.ctx[3 : 3 + size], 3, 1)

    def prefill(self, prompt_len: int) -> None:
        """The prompt but its newest token into the target's cache (that token is fed by the first round)."""
        self.target.prefill(self.ctx[: prompt_len - 1])

    def static_model(self, model: PreTrainedModel) -> StaticModel:
        """The static cache of one of the form's draft models, at this generation's capacity."""
        return self.decoder.model(model, self.target.capacity)

    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        n_ctx = len(ids_list)
        self._ensure(n_ctx + verify_size(gamma + 1))
        self.clock.start()
        if self.form is not None and gamma > 0:
            x, q = self.form.draft(self, ids_list, gamma, params, vocab_size)
        else:
            x, q = self.ctx[:0], torch.empty(0, vocab_size, device=self.device)
        g = len(x)
        self.ctx[n_ctx : n_ctx + g].copy_(x)  # the drafts follow the context in the buffer
        self.clock.mark()
        last = n_ctx - 1  # the newest context token is fed again, with the drafts, at its position
        logits = self.target.verify(self.ctx[last : last + verify_size(g + 1)], last, g + 1)
        p = logits_to_probs(fit_vocab(logits, vocab_size), params)  # [g + 1, V]

        def write_new_token(n: torch.Tensor, y: torch.Tensor) -> None:
            self.ctx.index_copy_(0, (n + n_ctx).view(1), y.view(1))  # after the accepted drafts
            self.clock.mark()

        verdict = accept(p, q, x, self.generator, params.greedy, before_sync=write_new_token)
        draft_s, verify_s = self.clock.spans()
        if self.form is not None:
            self.form.commit(n_ctx + verdict.n_accepted)
        return Round(verdict, draft_s, verify_s)

    def _ensure(self, needed: int) -> None:
        """Grow the buffers when live parameters ask for more room than the generation began with."""
        if needed <= min(m.capacity for m in self.models):
            return
        for m in self.models:
            m.grow(needed)
        ctx = torch.zeros(self.target.capacity + PAD_SLACK, dtype=torch.long, device=self.device)
        ctx[: len(self.ctx)] = self.ctx
        self.ctx = ctx


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
