"""The two proposal kinds a round can verify: what is proposed, the mask it is verified under, the rule
that tests it and the Verdict `decode()` emits.

- chain: up to γ tokens sampled from q, fed causally after the context and tested by min(1, p/q)
  (acceptance.accept); the accepted path is the leading drafts.
- tree: a token tree of deterministic candidates (at most γ deep), fed under the ancestor mask and tested
  by the one-hot rule (tree_accept.accept_tree). Its Verdict is the path seen as a chain, so `decode()`
  emits it unchanged: drafts = the path's tokens, then the first child rejected at the stop node when it
  had children (a corrected token follows) or nothing (a bonus token follows). The tree itself and every
  test go into `Round.extra` as RoundEvent's `tree_*` fields.

`rule_for` is the one place a generation's rounds are picked: the rule of the proposal kind the drafter
declares, bound to what proposes on the cache kind asked for (the drafter, or its static form), or
Unsupported with a one-line reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from .acceptance import Verdict, accept
from .protocols import Unsupported
from .static_kv import PADDED_SIZES, verify_size
from .tree import EMPTY, Tree
from .tree_accept import TreeLayout, TreeVerdict, accept_tree, layout

if TYPE_CHECKING:
    from .params import DecodeParams
    from .protocols import AnyDrafter, CacheBackend, ChainProposer, ProposalKind, Proposer, TreeProposer

FEATURES_NEED_A_PLAIN_HEAD = "this target's logits are not a plain head over its features; a feature draft cannot run"


@dataclass(frozen=True, slots=True)
class Proposal:
    """One round's proposal on the target's device: the n tokens fed after the root, with q [n, V] (a chain)
    or the tree they are the nodes of, in index order, and its layout (a tree)."""

    x: torch.Tensor  # [n] long
    q: torch.Tensor | None = None  # [n, V] float32: the chain's draft distributions
    tree: Tree | None = None  # None: a chain, each token after the one before
    layout: TreeLayout | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The rule's decision on the host: the Verdict decode() emits, the accepted rows, the round's extra fields."""

    verdict: Verdict
    path: tuple[int, ...]  # accepted proposal rows, in order (a chain: 0..n_accepted-1)
    extra: dict[str, Any]


class Rule(Protocol):
    """One proposal kind's rounds, bound to a generation's proposer (None: target-only rounds)."""

    kind: ProposalKind

    @property
    def proposer(self) -> Proposer | None:
        """What proposes: the drafter or its static form; rounds commit to it."""
        ...

    def propose(self, ids: torch.Tensor, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int,
                device: torch.device) -> Proposal:
        """ids [L] (the context on the device) -> this round's proposal on `device`; empty when gamma is 0."""
        ...

    def accept(self, p: torch.Tensor, proposal: Proposal, generator: torch.Generator, greedy: bool,
               before_sync: Callable[[], None]) -> Outcome:
        """p [1 + n, V] of the verify pass -> the decision, on the host after one sync."""
        ...

    def verify_sizes(self, gammas: Iterable[int]) -> list[int]:
        """The padded pass sizes rounds at these gammas use on static caches (what warm-up runs once each)."""
        ...


class ChainRule:
    kind: ProposalKind = "chain"

    def __init__(self, proposer: ChainProposer | None) -> None:
        self.proposer = proposer

    def propose(self, ids: torch.Tensor, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int,
                device: torch.device) -> Proposal:
        if self.proposer is None or gamma == 0:
            return Proposal(ids.new_empty(0), torch.empty(0, vocab_size, device=device))
        x, q = self.proposer.draft(ids, ids_list, gamma, params, vocab_size)
        return Proposal(x.to(device), q.to(device))

    def accept(self, p: torch.Tensor, proposal: Proposal, generator: torch.Generator, greedy: bool,
               before_sync: Callable[[], None]) -> Outcome:
        assert proposal.q is not None
        verdict = accept(p, proposal.q, proposal.x, generator, greedy, before_sync=before_sync)
        return Outcome(verdict, tuple(range(verdict.n_accepted)), {})

    def verify_sizes(self, gammas: Iterable[int]) -> list[int]:
        return sorted({1} | {verify_size(g + 1) for g in gammas})  # 1: target-only rounds


class TreeRule:
    kind: ProposalKind = "tree"

    def __init__(self, proposer: TreeProposer) -> None:
        self.proposer = proposer

    def propose(self, ids: torch.Tensor, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int,
                device: torch.device) -> Proposal:
        tree = self.proposer.draft_tree(ids, ids_list, gamma, params, vocab_size) if gamma else EMPTY
        lay = layout(tree, device)  # before the pass: on a GPU its copies then need no second sync
        return Proposal(lay.tokens, tree=tree, layout=lay)

    def accept(self, p: torch.Tensor, proposal: Proposal, generator: torch.Generator, greedy: bool,
               before_sync: Callable[[], None]) -> Outcome:
        tree = proposal.tree
        assert tree is not None
        tv = accept_tree(p, tree, generator, greedy, proposal.layout, before_sync=before_sync)
        return Outcome(as_chain(tree, tv), tv.path, tree_fields(tree, tv))

    def verify_sizes(self, gammas: Iterable[int]) -> list[int]:
        """Every padded size a tree of up to the proposer's budget can need (a lookup trie may be smaller)."""
        top = verify_size(min(self.proposer.budget, PADDED_SIZES[-1] - 1) + 1)
        return [s for s in PADDED_SIZES if s <= top]


def rule_for(drafter: AnyDrafter | None, backend: CacheBackend, static: bool) -> Rule:
    """The rounds of a generation with `drafter` (None: target-only) on `backend`'s target, on static caches
    or not: the rule of the proposal kind the drafter declares, bound to the drafter or its static form.
    Unsupported (one line) where the target or the drafter cannot run them."""
    if drafter is None:
        return ChainRule(None)
    reason = backend.tree_support() if drafter.proposes == "tree" else None
    if reason is None and drafter.wants_features and not backend.splits_head():
        reason = FEATURES_NEED_A_PLAIN_HEAD
    if reason is not None:
        raise Unsupported(reason)
    if drafter.proposes == "tree":  # the proposal kind the drafter declares
        return TreeRule(drafter.static_form() if static else drafter)
    return ChainRule(drafter.static_form() if static else drafter)


def kept_features(hidden: torch.Tensor, m: int, path: Sequence[int]) -> torch.Tensor:
    """hidden [m + n, H] of a verify pass -> [m + k, H]: the committed rows, then the accepted rows in path
    order; never a rejected one's."""
    k = len(path)
    if list(path) == list(range(k)):  # a chain, or a tree's first branch: the rows are in place
        return hidden[: m + k]
    rows = torch.tensor([m + i for i in path], dtype=torch.long, device=hidden.device)
    return torch.cat([hidden[:m], hidden.index_select(0, rows)])


def as_chain(tree: Tree, tv: TreeVerdict) -> Verdict:
    """The tree verdict as the chain `decode()` emits: the path, then the stop node's first rejected child.

    q is one-hot on every proposed token (q_x = 1), so accept_prob = p'(x) and the chain's overlap
    sum min(p, q) becomes p(S): the target mass of the candidate set at each node on the path.
    """
    nodes = list(tv.path)
    if tv.corrected:
        nodes.append(tree.children(tv.stop)[0])
    tested = {node: j for j, node in enumerate(tv.tested)}
    ones = tuple(1.0 for _ in nodes)
    return Verdict(
        drafts=tuple(tree.tokens[i] for i in nodes), n_accepted=tv.n_accepted, next_token=tv.next_token,
        p_y=tv.p_next, p_x=tuple(tv.p_x[i] for i in nodes), q_x=ones,
        accept_prob=tuple(tv.accept_prob[tested[i]] for i in nodes),
        overlap=tuple(candidate_mass(tree, tv.p_x, tree.parents[i]) for i in nodes),
        u=tuple(tv.u[tested[i]] for i in nodes), top_p=tv.top_p,
        top_q=tuple(((tree.tokens[i], 1.0),) for i in nodes), next_top=tv.next_top, nodes=tuple(nodes),
    )


def candidate_mass(tree: Tree, p_x: tuple[float, ...], node: int) -> float:
    """p(S) at `node` (tree.ROOT: the root): the target mass of its children's distinct tokens."""
    seen: dict[int, float] = {}
    for child in tree.children(node):
        seen.setdefault(tree.tokens[child], p_x[child])
    return sum(seen.values())


def tree_fields(tree: Tree, tv: TreeVerdict) -> dict[str, Any]:
    """RoundEvent's tree_* fields for one round."""
    return {
        "tree_tokens": tree.tokens, "tree_parents": tree.parents, "tree_scores": tree.scores, "tree_p": tv.p_x,
        "tree_tested": tv.tested, "tree_u": tv.u, "tree_accept_prob": tv.accept_prob,
        "tree_residual": tv.residual, "tree_path": tv.path,
    }
