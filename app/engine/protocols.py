"""Every interface of the engine, in one place: what a drafter proposes, what a round returns, what a cache
backend offers, and what a live γ controller exposes.

A drafter only proposes: a chain (`Drafter`) or a token tree (`TreeDrafter`), declared by `proposes`. It
describes itself: its tree form (a chain's, `tree_form`), its chain form (`chain_form`), its form on static
caches (`static_form`) and its live γ controller (`controller`), so nothing asks what kind of drafter it is.
It never names the code that runs its rounds; proposals.rule_for picks that from the proposal kind (and the
runner the cache from the cache kind). Its form on static caches (`static_form`) is a `StaticDraft` / `StaticTreeDraft`, or it
raises `Unsupported` with a one-line reason.

A `CacheBackend` is every model call and KV-cache operation the engine makes on one model (a target,
or a draft model's own cache). `kv.backend_for(model)` returns the transformers one unless the model
brings its own (a `cache_backend` attribute: the backend, or a factory of it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # nothing here runs torch: the policy and the session import this before torch loads
    import torch

    from .acceptance import Verdict
    from .events import RoundEvent
    from .params import DecodeParams
    from .policy.cost import DrafterProfile, VerifyCosts
    from .tree import Tree

ProposalKind = Literal["chain", "tree"]
CacheKind = Literal["dynamic", "static"]


class Unsupported(ValueError):
    """This drafter, model or proposal kind cannot run on the cache asked for; the message is one line."""


@dataclass(frozen=True, slots=True)
class Round:
    """What one round drafted, decided and cost. verdict.drafts[:n_accepted] then verdict.next_token are emitted."""

    verdict: Verdict
    draft_s: float  # seconds spent drafting
    verify_s: float  # seconds in the target pass plus the acceptance test
    extra: Mapping[str, Any] = field(default_factory=dict)  # RoundEvent fields only this proposal kind fills


@dataclass(frozen=True, slots=True)
class Verified:
    """What a verify pass returns: logits of the root's row then one per proposed token, and, when asked,
    the final-norm features of the fed committed rows then the proposal's (for a feature draft)."""

    logits: torch.Tensor  # [1 + n, V_model]
    hidden: torch.Tensor | None  # [m + n, H], or None
    m: int  # committed rows in hidden (the root, the newest context token, the last of them)
    start: int  # the position of hidden's first row


class RoundCache(Protocol):
    """The target's cache as a round sees it (round_dynamic.DynamicRoundCache, static.StaticRoundCache)."""

    kind: CacheKind
    device: torch.device
    clock: Any  # clock.Clock: the round's draft and verify spans

    def context(self, ids_list: list[int], gamma: int) -> torch.Tensor:
        """The context ids [L] on the device, with room for a round of up to gamma drafts."""
        ...

    def verify(self, ids_list: list[int], proposal: Any, features: bool) -> Verified:
        """One target pass over the uncached context and the proposal (proposals.Proposal)."""
        ...

    def keep(self, ids_list: list[int], path: Sequence[int], emitted: Sequence[int]) -> None:
        """After the rule: the cache holds the context plus the accepted rows `path`; `emitted` are the
        accepted tokens then the new one (the new token is fed next round)."""
        ...


class RoundRunner(Protocol):
    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        """One round after the context ids_list (its newest token not yet through the target); gamma may be 0."""
        ...


# --- what a round asks of a proposer ----------------------------------------------------------------


class ChainProposer(Protocol):
    def draft(self, ids: torch.Tensor, ids_list: list[int], gamma: int, params: DecodeParams,
              vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [L] (context, last token included) -> (tokens [g] long, q [g, V] float32), g <= gamma."""
        ...

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        """After verification: the first `kept` positions are final. features [kept - start, H] of positions
        start..kept-1 when the drafter `wants_features`, else None."""
        ...


class TreeProposer(Protocol):
    budget: int  # the most nodes a tree holds

    def draft_tree(self, ids: torch.Tensor, ids_list: list[int], depth: int, params: DecodeParams,
                   vocab_size: int) -> Tree:
        """ids [L] (context, last token included) -> a tree of at most `budget` nodes and `depth` levels,
        a deterministic function of the context and the draft (never of the verifier's coins)."""
        ...

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None: ...


Proposer = ChainProposer | TreeProposer


class StaticStep(Protocol):
    """A draft model's static cache, as a static form drafts through it (static_kv.StaticModel)."""

    def prefill(self, tokens: torch.Tensor, start: int = 0) -> torch.Tensor: ...

    def step(self, tokens: torch.Tensor, start: int) -> torch.Tensor: ...


class StaticBuffers(Protocol):
    """What a generation on static caches lends a static form: the token buffer and its draft models' caches."""

    ctx: torch.Tensor  # [capacity + slack] long: the context, then this round's proposal

    def static_model(self, model: Any) -> StaticStep: ...


class StaticDraft(ChainProposer, Protocol):
    """A chain drafter's form on static caches: it drafts without a host sync."""

    models: tuple[Any, ...]  # draft models that need a static cache of their own (may be empty)

    def prepare(self, buffers: StaticBuffers, prompt_len: int) -> None:
        """The prompt is in buffers.ctx and every cache is allocated: prefill what the draft holds."""
        ...


class StaticTreeDraft(TreeProposer, Protocol):
    """A tree drafter's form on static caches (a tree drafter drafts there as on dynamic ones)."""

    models: tuple[Any, ...]

    def prepare(self, buffers: StaticBuffers, prompt_len: int) -> None: ...


class _Lifecycle(Protocol):
    name: str
    wants_features: bool  # True: commit() receives the target's final-norm features of the kept positions

    def seed(self, seed: int) -> None:
        """Seed the drafter's own random stream (decode draws it from the main one)."""
        ...

    def begin(self) -> None:
        """Forget everything: a new sequence starts."""
        ...

    def chain_form(self) -> Drafter | None:
        """The chain this drafter proposes as its one best path: a chain drafter itself, a tree drafter the
        chain it was made from (None when it was built as a tree)."""
        ...

    def controller(self, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int) -> LiveController:
        """Its live γ controller (app/engine/policy), starting from the profile measured for it at load."""
        ...


class Drafter(_Lifecycle, ChainProposer, Protocol):
    """Proposes up to gamma tokens with the full q they were drawn from."""

    proposes: Literal["chain"]

    def static_form(self) -> StaticDraft:
        """This drafter on static caches; raises Unsupported (one line) where it cannot run there."""
        ...

    def tree_form(self, budget: int, depth: int) -> TreeDrafter | None:
        """The same draft proposing token trees of `budget` nodes and `depth` levels, sharing its model (and a
        feature draft its state); None for a drafter with no tree form."""
        ...


class TreeDrafter(_Lifecycle, TreeProposer, Protocol):
    """Proposes a token tree of deterministic candidates, tested by the one-hot rule (tree_accept)."""

    proposes: Literal["tree"]

    def static_form(self) -> StaticTreeDraft: ...


AnyDrafter = Drafter | TreeDrafter


# --- the model side ---------------------------------------------------------------------------------


class CacheBackend(Protocol):
    """Every model call and KV-cache operation the engine makes on one model, whatever its cache is."""

    device: torch.device

    def new_cache(self) -> Any:
        """An empty cache for one sequence."""
        ...

    def length(self, cache: Any) -> int:
        """Positions the cache holds."""
        ...

    def forward(self, cache: Any, ids: torch.Tensor, keep: int) -> torch.Tensor:
        """Feed ids [n] after what the cache holds -> logits [keep, V_model] of the last keep positions."""
        ...

    def trunk(self, cache: Any, ids: torch.Tensor) -> torch.Tensor:
        """Feed ids [n] through the decoder only -> final-norm hidden states [n, H]."""
        ...

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden [..., H] -> logits [..., V_model]."""
        ...

    def rollback(self, cache: Any, length: int) -> None:
        """Keep the first `length` positions."""
        ...

    def tree_forward(self, cache: Any, ids: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                     keep: int | None) -> torch.Tensor:
        """Feed ids [n] at explicit positions [n], row i seeing the cached and fed slots visible [n, held + n]
        (bool) marks -> logits [keep, V_model] of the last keep rows, or (keep None) hidden [n, H]."""
        ...

    def compact(self, cache: Any, past_len: int, path: Sequence[int]) -> None:
        """Keep past_len positions, then the fed rows `path` (indices after past_len) in that order."""
        ...

    def sync(self) -> None:
        """Wait for the device's queued work."""
        ...

    def context_limit(self) -> int | None: ...

    def splits_head(self) -> bool:
        """True when logits are exactly head(trunk(...)), so a feature draft can read the features."""
        ...

    def tree_support(self) -> str | None:
        """None when a tree pass is exact on this model, else a one-line reason."""
        ...


# --- the live γ controller --------------------------------------------------------------------------


class LiveController(Protocol):
    """Re-chooses γ (or keeps a tree's size) between rounds from live rounds; changes speed, never output."""

    name: str  # the drafter's spec
    label: str  # for people
    gamma_max: int  # the largest γ it may ask for
    rounds: int  # live rounds it has learnt from

    def observe(self, r: RoundEvent) -> None: ...

    def observe_step(self, seconds: float) -> None:
        """A target-only step of the real loop in this chat (the window's speedup baseline), so live rounds
        are priced against the chat's own step."""
        ...

    def gamma(self) -> int:
        """γ (a tree's depth) for the next round."""
        ...

    @property
    def predicted(self) -> float:
        """Predicted speedup over target-only from the live estimates."""
        ...

    @property
    def tokens_per_round(self) -> float:
        """E[tokens a round] (accepted drafts and the target's own token) from the live estimates."""
        ...

    @property
    def profile(self) -> DrafterProfile:
        """The live estimates as a profile (its label for people)."""
        ...


class LookupElse(Protocol):
    """What the lookup-else controller (policy.live_lookup) steers: the drafter's lookup and its draft's γ."""

    name: str
    proposer: str | None  # who proposed the last round: policy.live_lookup.LOOKUP, DRAFT or TARGET
    draft_gamma: int  # the draft's own γ; 0 turns the draft off

    @property
    def lookup(self) -> GatedLookup: ...

    def choose(self, device: torch.device, ids_list: list[int], gamma: int,
               vocab_size: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The lookup's proposal (or an empty, target-only one), else None: the draft drafts."""
        ...


class GatedLookup(Protocol):
    @property
    def alphas(self) -> list[float]:
        """The live acceptance per match position (of the match length likeliest to pay)."""
        ...

    baseline: float  # tokens per target step of the round run instead of a proposal
    verify: VerifyCosts  # what its proposals are priced at: the live controller's costs
