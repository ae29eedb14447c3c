"""Tree drafters: prompt lookup, a draft model (EAGLE-2 expansion), and the union of two.

Each is a tree_rounds.TreeDrafter: the Drafter lifecycle with `draft_tree(ids, ids_list, depth, params,
vocab_size) -> Tree` per round, run by tree_rounds.TreeRounds (`dynamic_rounds`) or, on static caches,
static_tree.StaticTreeRounds (`static_form`). `budget` (nodes) and
`depth` (the most levels; a round asks for at most gamma) are plain attributes a sizing policy may set.
(The feature draft's tree is feature_tree.FeatureTreeDrafter.)
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from .kv import cache_argument, forward, new_cache, rollback
from .rounds import Rounds
from .sampling import DecodeParams, fit_vocab
from .static_tree import static_tree_form
from .tree import EMPTY, Tree, additive, ancestry, make_tree
from .tree_draft import expand, lookup_tree, union
from .tree_rounds import TreeRounds


class _TreeLifecycle:
    """What every tree drafter shares: no random stream of its own (a tree is deterministic), and tree
    rounds on dynamic caches (tree_rounds.TreeRounds) or static ones (static_tree.StaticTreeRounds)."""

    wants_features = False

    def seed(self, seed: int) -> None:
        pass

    def static_form(self, decoder):
        return static_tree_form(self, decoder)

    def dynamic_rounds(self, target, prompt, generator) -> Rounds:
        return TreeRounds(target, prompt, self, generator)


class LookupTreeDrafter(_TreeLifecycle):
    """Every earlier match of the context's suffix, merged into a trie (tree_draft.lookup_tree)."""

    name = "prompt lookup tree"

    def __init__(self, budget: int = 8, depth: int = 4, max_ngram: int = 3, min_ngram: int = 1) -> None:
        self.budget, self.depth, self.max_ngram, self.min_ngram = budget, depth, max_ngram, min_ngram

    def begin(self) -> None:
        pass

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        pass

    def draft_tree(self, ids, ids_list, depth, params, vocab_size) -> Tree:
        return lookup_tree(ids_list, self.budget, min(depth, self.depth), self.max_ngram, self.min_ngram)


def draft_logprobs(logits: torch.Tensor, params: DecodeParams, vocab_size: int) -> torch.Tensor:
    """logits [..., V_model] -> log q [..., V] used to rank candidates (not to test them: the one-hot rule
    needs no q). The draft's own temperature (1 at greedy, so ranks follow its logits); no top-k/top-p,
    which would only hide candidates the target may still accept."""
    temperature = params.temperature if params.temperature > 0 else 1.0
    return (fit_vocab(logits, vocab_size).float() / temperature).log_softmax(-1)


class ModelTreeDrafter(_TreeLifecycle):
    """A causal LM sharing the target's vocabulary, expanded into a tree with one pass per depth.

    Its cache keeps the committed context only: each round feeds the tokens it lacks, extends the cache
    with the round's tree nodes (each attending to its own ancestors through a 4D mask), and crops the
    extension away before returning, as EAGLE's drafter does.
    """

    def __init__(self, model: PreTrainedModel, budget: int = 8, depth: int = 4, top_k: int = 4,
                 name: str = "draft model tree") -> None:
        self.model = model
        self.name = name
        self.budget, self.depth, self.top_k = budget, depth, top_k
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.cache = new_cache(model)

    def begin(self) -> None:
        self.cache = new_cache(self.model)

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        rollback(self.cache, kept)

    def draft_tree(self, ids, ids_list, depth, params, vocab_size) -> Tree:
        past_len = len(ids_list)
        depth = min(depth, self.depth)
        if self.budget < 1 or depth < 1:
            return EMPTY
        rollback(self.cache, past_len - 1)  # the root is always fed: its logits are the tree's first level
        step = ids[self.cache.get_seq_length() :].to(self.device)
        root_logq = draft_logprobs(forward(self.model, self.cache, step, keep=1)[-1], params, vocab_size)
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
            out = self.model(
                input_ids=torch.tensor([tokens], device=self.device), position_ids=positions.view(1, -1),
                attention_mask=additive(visible, self.dtype), use_cache=True,
                **{cache_argument(type(self.model)): self.cache},
            )
            return draft_logprobs(out.logits[0], params, vocab_size)  # [f, V]

        tree = expand(step_fn, root_logq, self.budget, depth, self.top_k)
        rollback(self.cache, past_len)  # the committed context only: the tree extension is thrown away
        return tree


class UnionTreeDrafter(_TreeLifecycle):
    """Two tree drafters' trees merged (tree_draft.union): the first's nodes, then what the second adds.
    `budget` is the sum of theirs; setting it splits a new budget in their proportion."""

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
