"""The round: one `step` for every proposal kind on every cache kind, and the table that pairs them.

A runner holds one generation's two axes, the proposal kind (proposals.CHAIN or TREE: what is proposed,
its mask, its rule, its Verdict) and the target's cache (round_dynamic.DynamicRoundCache or
static.StaticRoundCache: the context, the pass, keeping a path), and plays each round the same way:
propose, verify in one target pass, decide, keep the accepted path, commit it to the proposer (with the
target's features of the kept positions when the drafter reads them). `decode()` only asks it for rounds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .kv import backend_for
from .proposals import CHAIN, TREE, kept_features, plan
from .protocols import Round
from .round_dynamic import DynamicRoundCache
from .sampling import fit_vocab, logits_to_probs

if TYPE_CHECKING:
    from .params import DecodeParams
    from .proposals import Rule
    from .protocols import AnyDrafter, CacheKind, ProposalKind, Proposer, RoundCache
    from .static import StaticDecoder

# (target, prompt, proposer, features, static decoder or None, positions needed) -> the round's cache
Opener = Callable[[Any, list[int], Any, bool, Any, int], "RoundCache"]


def _dynamic(target: Any, prompt: list[int], proposer: Any, features: bool, static: Any, needed: int) -> RoundCache:
    return DynamicRoundCache(backend_for(target), prompt)


def _static(target: Any, prompt: list[int], proposer: Any, features: bool, static: Any, needed: int) -> RoundCache:
    return static.begin(prompt, proposer, features, needed)


# The one place a generation's runner is picked: by what the drafter proposes and which cache it runs on.
RUNNERS: dict[tuple[ProposalKind, CacheKind], tuple[Rule, Opener]] = {
    ("chain", "dynamic"): (CHAIN, _dynamic),
    ("tree", "dynamic"): (TREE, _dynamic),
    ("chain", "static"): (CHAIN, _static),
    ("tree", "static"): (TREE, _static),
}


class Runner:
    """One generation's rounds: a proposal rule, the target's cache, the proposer and the main random stream."""

    def __init__(self, rule: Rule, cache: RoundCache, proposer: Proposer | None, generator: torch.Generator,
                 features: bool) -> None:
        self.rule, self.cache, self.proposer, self.generator, self.features = rule, cache, proposer, generator, features

    @torch.inference_mode()
    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        cache, clock = self.cache, self.cache.clock
        ids = cache.context(ids_list, gamma)  # [L] on the device
        clock.start()
        proposal = self.rule.propose(self.proposer, ids, ids_list, gamma, params, vocab_size, cache.device)  # type: ignore[arg-type]
        clock.mark()  # the draft's work is counted as drafting
        seen = cache.verify(ids_list, proposal, self.features)
        p = logits_to_probs(fit_vocab(seen.logits, vocab_size), params)  # [1 + n, V]
        out = self.rule.accept(p, proposal, self.generator, params.greedy, before_sync=clock.mark)
        v = out.verdict
        cache.keep(ids_list, out.path, [*(v.drafts[: v.n_accepted]), v.next_token])
        if self.proposer is not None:
            features = kept_features(seen.hidden, seen.m, out.path) if seen.hidden is not None else None
            self.proposer.commit(len(ids_list) + v.n_accepted, features, seen.start)
        draft_s, verify_s = clock.spans()
        return Round(v, draft_s, verify_s, out.extra)


def begin_runner(target: Any, prompt: list[int], drafter: AnyDrafter | None, generator: torch.Generator,
                 max_new_tokens: int, static: StaticDecoder | None = None) -> Runner:
    """The runner for one generation after `prompt`, on `static` caches when given, else on the target's
    own growing cache. Unsupported (a one-line ValueError) where the pair cannot run there."""
    kind: ProposalKind = drafter.proposes if drafter is not None else "chain"
    rule, open_cache = RUNNERS[(kind, "static" if static is not None else "dynamic")]
    proposer = plan(rule, backend_for(target), drafter, static is not None)
    features = drafter is not None and drafter.wants_features
    cache = open_cache(target, prompt, proposer, features, static, len(prompt) + max_new_tokens)
    return Runner(rule, cache, proposer, generator, features)
