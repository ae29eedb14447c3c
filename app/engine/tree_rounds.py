"""Tree rounds on dynamic caches (`TreeRounds`) and the `TreeDrafter` interface that names them
(static_tree.StaticTreeRounds runs the same round on static caches).

A round drafts a token tree (at most gamma deep), verifies it in one target pass with the tree mask
(tree_verify), tests it with the exact one-hot rule (tree_accept), compacts the cache to the accepted
path and commits it to the drafter, with only the accepted path's features. The round's `Verdict`
is the path seen as a chain, so `decode()` emits it unchanged: drafts = the path's tokens, then the
first child rejected at the stop node when it had children (a corrected token follows) or nothing
(a bonus token follows). The tree itself and every test go into `Round.extra` as RoundEvent's
`tree_*` fields.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

import torch
from transformers import PreTrainedModel

from .acceptance import Verdict
from .kv import sync
from .rounds import Round, extend_ids, head_probs, start_runner
from .sampling import DecodeParams
from .tree import EMPTY, Tree
from .tree_accept import TreeVerdict, accept_tree, layout
from .tree_verify import compact, tree_forward, tree_support, verify_tree

if TYPE_CHECKING:
    from .static import StaticDecoder
    from .static_tree import StaticTree


class TreeDrafter(Protocol):
    """drafters.Drafter's lifecycle (name, wants_features, seed, begin, commit, static_form,
    dynamic_rounds) with `draft_tree` in place of `draft`. `budget` is its node budget."""

    name: str
    wants_features: bool
    budget: int

    def seed(self, seed: int) -> None: ...

    def begin(self) -> None: ...

    def draft_tree(self, ids: torch.Tensor, ids_list: list[int], depth: int, params: DecodeParams,
                   vocab_size: int) -> Tree:
        """ids [L] (context, last token included) -> a tree of at most `budget` nodes and `depth` levels,
        a deterministic function of the context and the draft (never of the verifier's coins)."""

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None: ...

    def static_form(self, decoder: StaticDecoder) -> StaticTree | str:
        """static_tree.static_tree_form: tree rounds on static caches, or why the target refuses them."""


class TreeRounds:
    """Tree rounds on transformers' DynamicCache; the target must take a 4D mask (tree_support)."""

    def __init__(self, target: PreTrainedModel, prompt: list[int], drafter: TreeDrafter,
                 generator: torch.Generator) -> None:
        reason = tree_support(target)
        if reason is not None:
            raise ValueError(reason)
        start_runner(self, target, prompt, drafter, generator)

    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        self.ids = ids = extend_ids(self.ids, ids_list)
        t0 = time.perf_counter()
        tree = self.drafter.draft_tree(ids, ids_list, gamma, params, vocab_size) if gamma > 0 else EMPTY
        lay = layout(tree, self.device)  # before the pass: on a GPU its copies then need no second sync
        sync(self.device)
        t1 = time.perf_counter()
        past_len = len(ids_list)
        start = self.cache.get_seq_length()
        m = past_len - start  # uncached committed tokens, the root (the newest) last
        if self.features:
            hidden = tree_forward(self.target, self.cache, ids[start:], tree, past_len, trunk=True)  # [m + n, H]
            p = head_probs(self.target, hidden[m - 1 :], params, vocab_size)  # [1 + n, V]: root, then nodes
        else:
            p = verify_tree(self.target, self.cache, ids, tree, params, vocab_size)  # [1 + n, V]
        tv = accept_tree(p, tree, self.generator, params.greedy, lay)
        compact(self.cache, past_len, tv.path)
        kept = past_len + tv.n_accepted
        self.drafter.commit(kept, kept_features(hidden, m, tv.path) if self.features else None, start)
        return Round(as_chain(tree, tv), t1 - t0, time.perf_counter() - t1, tree_fields(tree, tv))


def kept_features(hidden: torch.Tensor, m: int, path: tuple[int, ...]) -> torch.Tensor:
    """hidden [m + n, H] of a tree pass -> [m + k, H]: the committed rows, then the accepted nodes' rows
    in path order; never a rejected branch's."""
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


def tree_fields(tree: Tree, tv: TreeVerdict) -> dict[str, object]:
    """RoundEvent's tree_* fields for one round."""
    return {
        "tree_tokens": tree.tokens, "tree_parents": tree.parents, "tree_scores": tree.scores, "tree_p": tv.p_x,
        "tree_tested": tv.tested, "tree_u": tv.u, "tree_accept_prob": tv.accept_prob,
        "tree_residual": tv.residual, "tree_path": tv.path,
    }
