"""Tree drafters: prompt lookup, a draft model (EAGLE-2 expansion), and the union of two.

Each is a protocols.TreeDrafter: the Drafter lifecycle with `draft_tree(ids, ids_list, depth, params,
vocab_size) -> Tree` per round; it drafts the same on static caches (its static form is itself: a draft
model keeps its own dynamic cache). `budget` (nodes) and `depth` (the most levels; a round asks for at
most gamma) are plain attributes a sizing policy may set. A chain drafter makes its tree form (its
`tree_form`), which keeps that chain as its `chain_form()`; its live controller keeps the tree's measured
size (policy.TreeSize). (The feature draft's tree is feature_tree.FeatureTreeDrafter.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

import torch

from .kv import backend_for
from .policy.live import TreeSize
from .sampling import DecodeParams, fit_vocab
from .tree import EMPTY, Tree, ancestry, make_tree
from .tree_draft import expand, lookup_tree, union

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from .policy.cost import DrafterProfile, VerifyCosts
    from .protocols import Drafter, LiveController, StaticBuffers

# Children per frontier node and frontier width of a tree form's expansion (EAGLE-2 uses 10). The trained
# draft on chat-heldout at T = 0, 16 nodes: 1.88 tokens a round at 4, 1.95 at 8, 1.99 at 10, 2.00 at 12 (the
# chain γ 4: 1.47); tree_draft.expand prunes what a small budget cannot keep, so width costs little.
TREE_TOP_K = 10


class TreeLifecycle:
    """What every tree drafter shares: it proposes trees, has no random stream of its own (a tree is
    deterministic), drafts on static caches as on dynamic ones, keeps the chain it was made from (None when
    built as a tree) and keeps its measured size live (policy.TreeSize)."""

    wants_features = False
    proposes: Literal["tree"] = "tree"
    models = ()  # no static cache of its own
    chain: Drafter | None = None
    budget: int
    depth: int

    def seed(self, seed: int) -> None:
        pass

    def static_form(self):
        return self

    def prepare(self, buffers: StaticBuffers, prompt_len: int) -> None:
        pass  # decode() began the drafter; a feature draft's prompt features come with the first round

    def chain_form(self) -> Drafter | None:
        return self.chain

    def controller(self, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int) -> LiveController:
        return TreeSize(profile, verify, self.budget, self.depth)


class LookupTreeDrafter(TreeLifecycle):
    """Every earlier match of the context's suffix, merged into a trie (tree_draft.lookup_tree)."""

    name = "prompt lookup tree"

    def __init__(self, budget: int = 8, depth: int = 4, max_ngram: int = 3, min_ngram: int = 1,
                 never: Iterable[int] = (), chain: Drafter | None = None) -> None:
        self.budget, self.depth, self.max_ngram, self.min_ngram = budget, depth, max_ngram, min_ngram
        self.never = frozenset(never)  # tokens it never proposes (drafters.PromptLookupDrafter)
        self.chain = chain

    def begin(self) -> None:
        pass

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        pass

    def draft_tree(self, ids, ids_list, depth, params, vocab_size) -> Tree:
        return lookup_tree(ids_list, self.budget, min(depth, self.depth), self.max_ngram, self.min_ngram, self.never)


def draft_logprobs(logits: torch.Tensor, params: DecodeParams, vocab_size: int) -> torch.Tensor:
    """logits [..., V_model] -> log q [..., V] used to rank candidates (not to test them: the one-hot rule
    needs no q). The draft's own temperature (1 at greedy, so ranks follow its logits); no top-k/top-p,
    which would only hide candidates the target may still accept."""
    temperature = params.temperature if params.temperature > 0 else 1.0
    return (fit_vocab(logits, vocab_size).float() / temperature).log_softmax(-1)


class ModelTreeDrafter(TreeLifecycle):
    """A causal LM sharing the target's vocabulary, expanded into a tree with one pass per depth.

    Its cache keeps the committed context only: each round feeds the tokens it lacks, extends the cache
    with the round's tree nodes (each attending to its own ancestors through a 4D mask), and crops the
    extension away before returning, as EAGLE's drafter does.
    """

    def __init__(self, model: PreTrainedModel, budget: int = 8, depth: int = 4, top_k: int = 4,
                 name: str = "draft model tree", chain: Drafter | None = None) -> None:
        self.model = model
        self.name = name
        self.chain = chain
        self.budget, self.depth, self.top_k = budget, depth, top_k
        self.backend = backend_for(model)
        self.device = self.backend.device
        self.cache = self.backend.new_cache()

    def begin(self) -> None:
        self.cache = self.backend.new_cache()

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        self.backend.rollback(self.cache, kept)

    def draft_tree(self, ids, ids_list, depth, params, vocab_size) -> Tree:
        past_len = len(ids_list)
        depth = min(depth, self.depth)
        if self.budget < 1 or depth < 1:
            return EMPTY
        backend = self.backend
        backend.rollback(self.cache, past_len - 1)  # the root is always fed: its logits are the tree's first level
        step = ids[backend.length(self.cache) :].to(self.device)
        root_logq = draft_logprobs(backend.forward(self.cache, step, keep=1)[-1], params, vocab_size)
        fed_tokens: list[int] = []
        fed_parents: list[int] = []

        @torch.inference_mode()
        def step_fn(tokens, parents):
            start = len(fed_tokens)
            fed_tokens.extend(tokens)
            fed_parents.extend(parents)
            fed = make_tree(fed_tokens, fed_parents)
            f = len(tokens)
            visible = torch.ones(f, past_len + len(fed), dtype=torch.bool, device=self.device)
            visible[:, past_len:] = ancestry(fed, self.device)[start:]  # context, then own ancestors only
            positions = past_len + torch.tensor(fed.depth[start:], device=self.device)
            token_ids = torch.tensor(list(tokens), dtype=torch.long, device=self.device)
            logits = backend.tree_forward(self.cache, token_ids, positions, visible, keep=f)  # [f, V_model]
            return draft_logprobs(logits, params, vocab_size)  # [f, V]

        tree = expand(step_fn, root_logq, self.budget, depth, self.top_k)
        backend.rollback(self.cache, past_len)  # the committed context only: the tree extension is thrown away
        return tree


class UnionTreeDrafter(TreeLifecycle):
    """Two tree drafters' trees merged (tree_draft.union): the first's nodes, then what the second adds.
    `budget` is the sum of theirs; setting it splits a new budget in their proportion."""

    models = ()

    def __init__(self, first, second) -> None:
        self.first, self.second = first, second
        self.name = f"{first.name} + {second.name}"
        self.wants_features = first.wants_features or second.wants_features

    @property
    def budget(self) -> int:
        return self.first.budget + self.second.budget

    @budget.setter
    def budget(self, nodes: int) -> None:
        share = round(nodes * self.first.budget / max(self.budget, 1))
        self.first.budget, self.second.budget = share, nodes - share

    @property
    def depth(self) -> int:
        return max(self.first.depth, self.second.depth)

    @depth.setter
    def depth(self, levels: int) -> None:
        self.first.depth = self.second.depth = levels

    def chain_form(self) -> Drafter | None:
        return self.first.chain_form()

    def seed(self, seed: int) -> None:
        self.first.seed(seed)
        self.second.seed(seed)

    def begin(self) -> None:
        self.first.begin()
        self.second.begin()

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        # Each side gets the features only when it reads them.
        self.first.commit(kept, features if self.first.wants_features else None, start)
        self.second.commit(kept, features if self.second.wants_features else None, start)

    def draft_tree(self, ids, ids_list, depth, params, vocab_size) -> Tree:
        return union(self.first.draft_tree(ids, ids_list, depth, params, vocab_size),
                     self.second.draft_tree(ids, ids_list, depth, params, vocab_size))
