"""The round: one `step` for every proposal kind on every cache kind.

A runner holds one generation's two axes, its rule (proposals.rule_for: the proposal kind the drafter
declares, bound to its proposer: what is proposed, its mask, its test, its Verdict) and the target's cache
(round_dynamic.DynamicRoundCache, or static.StaticRoundCache when a StaticDecoder is given: the context,
the pass, keeping a path), and plays each round the same way: propose, verify in one target pass, decide,
keep the accepted path, commit it to the proposer (with the target's features of the kept positions when
the drafter reads them). `decode()` only asks it for rounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from .kv import backend_for
from .proposals import kept_features, rule_for
from .protocols import Round
from .round_dynamic import DynamicRoundCache
from .sampling import fit_vocab, logits_to_probs

if TYPE_CHECKING:
    from .params import DecodeParams
    from .proposals import Rule
    from .protocols import AnyDrafter, RoundCache
    from .static import StaticDecoder


class Runner:
    """One generation's rounds: its rule (bound to the proposer), the target's cache and the main random stream."""

    def __init__(self, rule: Rule, cache: RoundCache, generator: torch.Generator, features: bool) -> None:
        self.rule, self.cache, self.generator, self.features = rule, cache, generator, features

    @torch.inference_mode()
    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        cache, clock = self.cache, self.cache.clock
        ids = cache.context(ids_list, gamma)  # [L] on the device
        clock.start()
        proposal = self.rule.propose(ids, ids_list, gamma, params, vocab_size, cache.device)
        clock.mark()  # the draft's work is counted as drafting
        seen = cache.verify(ids_list, proposal, self.features)
        p = logits_to_probs(fit_vocab(seen.logits, vocab_size), params)  # [1 + n, V]
        out = self.rule.accept(p, proposal, self.generator, params.greedy, before_sync=clock.mark)
        v = out.verdict
        cache.keep(ids_list, out.path, [*(v.drafts[: v.n_accepted]), v.next_token])
        proposer = self.rule.proposer
        if proposer is not None:
            features = kept_features(seen.hidden, seen.m, out.path) if seen.hidden is not None else None
            proposer.commit(len(ids_list) + v.n_accepted, features, seen.start)
        draft_s, verify_s = clock.spans()
        return Round(v, draft_s, verify_s, out.extra)


def begin_runner(target: Any, prompt: list[int], drafter: AnyDrafter | None, generator: torch.Generator,
                 max_new_tokens: int, static: StaticDecoder | None = None) -> Runner:
    """The runner for one generation after `prompt`, on `static` caches when given, else on the target's
    own growing cache. Unsupported (a one-line ValueError) where the pair cannot run there."""
    rule = rule_for(drafter, backend_for(target), static is not None)
    features = drafter is not None and drafter.wants_features
    needed = len(prompt) + max_new_tokens
    cache: RoundCache
    if static is not None:
        cache = static.begin(prompt, rule.proposer, features, needed)
    else:
        cache = DynamicRoundCache(backend_for(target), prompt)
    return Runner(rule, cache, generator, features)
