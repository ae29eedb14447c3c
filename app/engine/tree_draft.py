"""Building token trees: an n-gram trie from the context, EAGLE-2's expansion of a draft model, and unions.

Each tree is a deterministic function of the committed context and the draft's outputs, never of
the verifier's coins, which is all the one-hot rule needs to stay exact (tree_accept). Children are
ordered best score first; the order changes which coins are looked at, never the output law.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .tree import ROOT, Tree, make_tree

# step_fn(tokens [f], parents [f]) feeds f new nodes to the draft and returns its log q [f, V] after each.
# parents index the nodes fed by earlier calls, in feed order (ROOT: a child of the root).
StepFn = Callable[[Sequence[int], Sequence[int]], torch.Tensor]


def _best(nodes: list[tuple[int, int, float]], budget: int) -> Tree:
    """nodes (token, parent index, score) with parents first -> a Tree of the `budget` best, parents first.

    Ranked by score, then depth, then creation: a child never outscores its parent (the callers'
    scores only fall along a path), so the kept set is ancestor-closed and the ranking is topological.
    """
    depth: list[int] = []
    for _, parent, _ in nodes:
        depth.append(0 if parent == ROOT else depth[parent] + 1)
    order = sorted(range(len(nodes)), key=lambda i: (-nodes[i][2], depth[i], i))[:budget]
    index = {old: new for new, old in enumerate(order)}
    parents = []
    for old in order:
        parent = nodes[old][1]
        if parent != ROOT and parent not in index:
            raise ValueError("a kept node's parent was dropped: scores must not rise along a path")
        parents.append(ROOT if parent == ROOT else index[parent])
    return make_tree([nodes[i][0] for i in order], parents, [nodes[i][2] for i in order])


def lookup_tree(ids: Sequence[int], budget: int, depth: int, max_ngram: int = 3, min_ngram: int = 1,
                never: frozenset[int] = frozenset()) -> Tree:
    """Every earlier match of the context's suffix, its continuation (up to `depth` tokens) merged into a trie.

    A match at position j is a continuation ids[j:] whose preceding l tokens equal the context's last l,
    min_ngram <= l <= max_ngram (each position counted once, with its longest l). A node's score is the
    sum of l over the matches through it, so longer and more frequent matches rank first. A continuation
    stops before a token in `never` (drafters.PromptLookupDrafter says which).
    """
    n_ctx = len(ids)
    nodes: list[tuple[int, int, float]] = []
    slot: dict[tuple[int, int], int] = {}  # (parent, token) -> node
    matches = []
    for j in range(1, n_ctx):
        length = 0
        while length < max_ngram and length < j and ids[j - 1 - length] == ids[n_ctx - 1 - length]:
            length += 1
        if length >= min_ngram:
            matches.append((length, j))
    for length, j in sorted(matches, key=lambda m: (-m[0], -m[1])):  # longest, then latest, first
        parent = ROOT
        for token in ids[j : min(j + depth, n_ctx)]:
            if token in never:
                break
            key = (parent, token)
            if key not in slot:
                slot[key] = len(nodes)
                nodes.append((token, parent, 0.0))
            node = slot[key]
            nodes[node] = (token, parent, nodes[node][2] + length)
            parent = node
    return _best(nodes, budget)


def _top(logq: torch.Tensor, top_k: int) -> tuple[list[list[float]], list[list[int]]]:
    """logq [f, V] -> each row's top_k (log q, token) on the host, in one device read."""
    values, tokens = logq.topk(min(top_k, logq.shape[-1]), dim=-1)  # [f, k]
    host = torch.stack([values.double(), tokens.double()]).tolist()  # token ids are exact in float64
    return host[0], [[int(t) for t in row] for row in host[1]]


def expand(step_fn: StepFn, root_logq: torch.Tensor, budget: int, depth: int, top_k: int) -> Tree:
    """EAGLE-2's tree (Li et al. 2024, `topK_genrate`): root_logq [V] the draft's log q after the context.

    At each depth every frontier node proposes its top_k tokens, scored by cumulative log q; the global
    top_k of those become the next frontier and are fed to the draft (up to depth - 1 calls of step_fn).
    Every scored candidate stays in the pool; the tree keeps the `budget` best of them. One device
    read per level (the candidates' scores and tokens together).

    Work that cannot change the kept tree is skipped (a child never outscores its parent and ranks
    after every shallower node of its score, see _best): at most `budget` children per node and
    frontier nodes, at most `budget` levels, and no further level once `budget` nodes already score
    at least as high as the best frontier node.
    """
    width = min(top_k, budget)
    nodes: list[tuple[int, int, float]] = []
    values, tokens = _top(root_logq[None], width)
    frontier = []
    for value, token in zip(values[0], tokens[0], strict=True):
        if value > float("-inf"):
            frontier.append(len(nodes))
            nodes.append((token, ROOT, value))
    fed: dict[int, int] = {}  # node -> its feed index, as step_fn's parents count them
    for _ in range(min(depth, budget) - 1):
        if not frontier:
            break
        best = nodes[frontier[0]][2]  # the frontier is sorted best first
        if sum(1 for node in nodes if node[2] >= best) >= budget:
            break  # every child would rank after `budget` nodes already in the pool
        parents = [fed.get(nodes[i][1], ROOT) for i in frontier]
        fed.update({node: len(fed) for node in frontier})
        values, tokens = _top(step_fn([nodes[i][0] for i in frontier], parents), width)  # [f, k] each
        created = []
        for row, node in enumerate(frontier):
            for value, token in zip(values[row], tokens[row], strict=True):
                score = nodes[node][2] + value
                if score > float("-inf"):
                    created.append(len(nodes))
                    nodes.append((token, node, score))
        frontier = sorted(created, key=lambda i: (-nodes[i][2], i))[:width]
    return _best(nodes, budget)


def union(a: Tree, b: Tree) -> Tree:
    """Both trees in one, equal prefixes merged: a's nodes in order, then b's that a lacks (with b's scores)."""
    tokens, parents, scores = list(a.tokens), list(a.parents), list(a.scores)
    slot = {(parent, token): i for i, (token, parent) in enumerate(zip(a.tokens, a.parents, strict=True))}
    where: list[int] = []  # b's node -> its index in the union
    for token, parent, score in zip(b.tokens, b.parents, b.scores, strict=True):
        key = (ROOT if parent == ROOT else where[parent], token)
        if key not in slot:
            slot[key] = len(tokens)
            tokens.append(token)
            parents.append(key[0])
            scores.append(score)
        where.append(slot[key])
    return make_tree(tokens, parents, scores)
