"""Tree rounds on static caches (`StaticTreeRounds`) and the static form every tree drafter gives (`StaticTree`).

The round is tree_rounds.TreeRounds' in the same order of random draws (the drafter draws none; the rule
one uniform per node, then the final draw), so a seed gives the same tokens and events on both caches.
What differs:
- the context lives in the device buffer `ctx`; the nodes are written after it, and the pass feeds
  ctx[past_len - 1 : past_len - 1 + S]: the root, the n nodes, then padding up to S = verify_size(n + 1),
  one of the static path's fixed sizes (each one compiled graph), the padding masked out
  (tree_verify.static_tree_inputs);
- compaction is an index copy inside the preallocated buffers (tree_verify.compact_static), and the emitted
  tokens are copied into `ctx` from the verdict the one sync brought back;
- a feature draft gets the prompt's features from the static prefill with the first round's.

Host syncs: the rule's one packed transfer per round (tree_accept.accept_tree). A prompt-lookup trie is
host data and adds none. A model or feature draft's expansion reads each level's top candidates back to
the host (tree_draft.expand), one read per level, as it does on dynamic caches: the tree's shape is host
data that the mask and the rule are built from.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import torch

from .kv import splits_head
from .rounds import Round
from .sampling import DecodeParams, fit_vocab, logits_to_probs
from .static import StaticRounds
from .static_kv import PADDED_SIZES, verify_size
from .tree import EMPTY
from .tree_accept import accept_tree, layout
from .tree_rounds import as_chain, kept_features, tree_fields
from .tree_verify import compact_static, static_tree_inputs, tree_support

if TYPE_CHECKING:
    from .static import StaticDecoder
    from .tree_rounds import TreeDrafter


class StaticTreeRounds(StaticRounds):
    """StaticRounds' buffers and clock, with a tree drafted, verified in one padded pass and compacted."""

    form: StaticTree

    @staticmethod
    def verify_sizes(drafter: TreeDrafter, gammas: Iterable[int]) -> list[int]:
        """Every padded size a tree of up to the drafter's budget can need (a lookup trie may be smaller)."""
        top = verify_size(min(drafter.budget, PADDED_SIZES[-1] - 1) + 1)
        return [s for s in PADDED_SIZES if s <= top]

    def warm_verify(self, size: int) -> None:
        pos, block = static_tree_inputs(EMPTY, 4, size, self.device)
        self.target.tree(self.ctx[3 : 3 + size], 3, pos, block)

    def prefill(self, prompt_len: int) -> None:
        hidden = self.target.prefill(self.ctx[: prompt_len - 1])  # [L - 1, H]
        self.features = self.form.drafter.wants_features
        self.prompt_features = hidden if self.features else None  # handed over with the first round's

    @torch.inference_mode()
    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        past_len = len(ids_list)
        drafter = self.form.drafter
        self.clock.start()
        ids = self.ctx[:past_len]
        tree = drafter.draft_tree(ids, ids_list, gamma, params, vocab_size) if gamma > 0 else EMPTY
        n = len(tree)
        if n + 1 > PADDED_SIZES[-1]:
            raise ValueError(f"a tree of {n} nodes is more than the static cache's largest pass ({PADDED_SIZES[-1] - 1})")
        size = verify_size(n + 1)
        self._ensure(past_len + size)
        lay = layout(tree, self.device)  # host-built, copied before the pass: no second sync
        pos, block = static_tree_inputs(tree, past_len, size, self.device)
        self.ctx[past_len : past_len + n].copy_(lay.tokens)  # the nodes after the context, in index order
        self.clock.mark()
        root = past_len - 1
        hidden = self.target.tree(self.ctx[root : root + size], root, pos, block)  # [size, H]
        p = logits_to_probs(fit_vocab(self.target.head(hidden[: n + 1]), vocab_size), params)  # [1 + n, V]
        tv = accept_tree(p, tree, self.generator, params.greedy, lay, before_sync=self.clock.mark)
        compact_static(self.target.cache, past_len, tv.path)
        emitted = [tree.tokens[i] for i in tv.path] + [tv.next_token]
        self.ctx[past_len : past_len + len(emitted)] = torch.tensor(emitted, dtype=torch.long)
        features, start = None, root
        if self.features:
            features = kept_features(hidden, 1, tv.path)  # the root's row, then the accepted path's
            if self.prompt_features is not None:
                features, start, self.prompt_features = torch.cat([self.prompt_features, features]), 0, None
        drafter.commit(past_len + tv.n_accepted, features, start)
        draft_s, verify_s = self.clock.spans()
        return Round(as_chain(tree, tv), draft_s, verify_s, tree_fields(tree, tv))


class StaticTree:
    """A tree drafter on static caches: it drafts as on dynamic caches (its own draft state; a draft
    model keeps its dynamic cache), and StaticTreeRounds verifies on the target's static one."""

    models = ()
    runner = StaticTreeRounds

    def __init__(self, drafter: TreeDrafter) -> None:
        self.drafter = drafter

    def begin(self, rounds: StaticRounds, prompt_len: int) -> None:
        pass  # decode() began the drafter; the prompt's features come with the first round


def static_tree_form(drafter: TreeDrafter, decoder: StaticDecoder) -> StaticTree | str:
    """`static_form` of every tree drafter: its StaticTree, or a one-line reason the target refuses trees."""
    reason = tree_support(decoder.target)
    if reason is None and drafter.wants_features and not splits_head(decoder.target):
        reason = "this target's logits are not a plain head over its features; a feature draft cannot run"
    return reason or StaticTree(drafter)
