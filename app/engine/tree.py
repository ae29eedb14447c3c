"""A token tree proposed for one round: nodes in topological order, with its attention mask and positions.

The root is the last committed token (it is not a node). Node i proposes `tokens[i]` after the path
root -> ... -> parents[i]; parents[i] = -1 makes it a child of the root. Parents always precede their
children, so one pass over the nodes in index order sees every ancestor first. `depth[i]` counts the
tree ancestors of i (0 for a child of the root): with L committed tokens, node i sits at position L + depth[i].
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ROOT = -1  # the parent index of a child of the root


@dataclass(frozen=True, slots=True)
class Tree:
    tokens: tuple[int, ...]  # [n] proposed token ids
    parents: tuple[int, ...]  # [n] index of the parent node, ROOT for a child of the root
    depth: tuple[int, ...]  # [n] number of tree ancestors
    scores: tuple[float, ...]  # [n] the drafter's score: cumulative log q (model draft), match weight (lookup)

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if not len(self.parents) == len(self.depth) == len(self.scores) == n:
            raise ValueError("a tree needs one parent, depth and score per token")
        for i, parent in enumerate(self.parents):
            if not ROOT <= parent < i:
                raise ValueError(f"node {i}: its parent {parent} must come before it")
            if self.depth[i] != (0 if parent == ROOT else self.depth[parent] + 1):
                raise ValueError(f"node {i}: depth {self.depth[i]} does not follow its parent's")

    def __len__(self) -> int:
        return len(self.tokens)

    def children(self, node: int) -> list[int]:
        """The children of node (ROOT for the root's) in their fixed order: index order."""
        return [i for i, parent in enumerate(self.parents) if parent == node]

    def path(self, node: int) -> list[int]:
        """Node indices from the root's child down to node (empty for ROOT)."""
        out = []
        while node != ROOT:
            out.append(node)
            node = self.parents[node]
        return out[::-1]

    def path_tokens(self, node: int) -> list[int]:
        return [self.tokens[i] for i in self.path(node)]

    def leaves(self) -> list[int]:
        inner = set(self.parents)
        return [i for i in range(len(self)) if i not in inner]


def make_tree(tokens, parents, scores=None) -> Tree:
    """A Tree from tokens and parents (parents before children), depths derived; scores default to 0."""
    depth: list[int] = []
    for i, parent in enumerate(parents):
        if not ROOT <= parent < i:
            raise ValueError(f"node {i}: its parent {parent} must come before it")
        depth.append(0 if parent == ROOT else depth[parent] + 1)
    scores = tuple(float(s) for s in scores) if scores is not None else (0.0,) * len(tokens)
    return Tree(tuple(int(t) for t in tokens), tuple(int(p) for p in parents), tuple(depth), scores)


EMPTY = make_tree((), ())


def chain(tokens, scores=None) -> Tree:
    """A chain as a tree: each token the only child of the one before."""
    return make_tree(tokens, range(-1, len(tokens) - 1), scores)


def ancestry(tree: Tree, device=None) -> torch.Tensor:
    """bool [n, n]: [i, j] is True when node j is node i or one of its ancestors."""
    n = len(tree)
    anc = torch.zeros(n, n, dtype=torch.bool)
    for i, parent in enumerate(tree.parents):
        if parent != ROOT:
            anc[i] = anc[parent]  # the parent's row is complete: parents come first
        anc[i, i] = True
    return anc.to(device)


def additive(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool [rows, cols] -> additive mask [1, 1, rows, cols] of 0 (seen) and the dtype's minimum (hidden).

    Float, not bool: eager attention adds the mask to the scores, so it must be additive (a 1/0 float
    mask would be the classic mistake); SDPA takes the same float mask. transformers' masking utilities
    return a 4D mask as is (masking_utils._preprocess_mask_arguments), which tests/engine/test_tree_verify checks.
    """
    zero = torch.zeros((), dtype=dtype, device=visible.device)
    return torch.where(visible, zero, torch.finfo(dtype).min)[None, None]


def tree_visible(tree: Tree, past_len: int, fresh: int = 0, device=None) -> torch.Tensor:
    """bool [fresh + n, past_len + n]: what each row of a pass sees that feeds the last `fresh` committed
    tokens then the n nodes, after a cache holding past_len - fresh positions.

    A committed row sees the committed positions up to its own (causal); node row i sees all past_len
    committed positions and its own ancestors (itself included), never a sibling or a cousin.
    """
    n = len(tree)
    ctx = torch.arange(past_len, device=device)
    rows_ctx = torch.arange(past_len - fresh, past_len, device=device)
    visible = torch.zeros(fresh + n, past_len + n, dtype=torch.bool, device=device)
    visible[:fresh, :past_len] = ctx[None, :] <= rows_ctx[:, None]
    visible[fresh:, :past_len] = True
    visible[fresh:, past_len:] = ancestry(tree, device)
    return visible


def tree_mask(tree: Tree, past_len: int, fresh: int = 0, dtype=torch.float32, device=None) -> torch.Tensor:
    """`tree_visible` as the additive mask [1, 1, fresh + n, past_len + n] a transformers model takes."""
    return additive(tree_visible(tree, past_len, fresh, device), dtype)


def tree_positions(tree: Tree, past_len: int, fresh: int = 0, device=None) -> torch.Tensor:
    """Position ids [fresh + n]: the fresh committed tokens' own positions, then past_len + depth per node."""
    depth = torch.tensor(tree.depth, dtype=torch.long, device=device)
    return torch.cat([torch.arange(past_len - fresh, past_len, device=device), past_len + depth])
