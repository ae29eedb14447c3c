"""The exact one-hot rule for a tree of deterministic candidates (EAGLE-2's, SpecInfer's with q = 1).

At a node, p' <- p (the target's processed distribution there). For its children x_1, x_2, ... in order:
accept x_i when u_i < p'(x_i) and descend into it; otherwise set p'(x_i) = 0, renormalise, try the
next. When every child is rejected the corrected token is drawn from that final p'; at an accepted
leaf the bonus token is drawn from the full p there. Child i is reached with probability
1 - sum_{j<i} p(x_j), so P(accept x_i) = p(x_i): the emitted sequence is a target sample stopped at
its first token outside the tree, for any candidate set chosen without the verifier's coins.

A chain *sampled* from q keeps the q-based rule (acceptance.decide): min(1, p/q) accepts sum min(p, q),
which beats p(S) when q ~ p. Testing deterministic children with min(1, p/q) is inexact (a child chosen
for its high q is accepted with min(1, p/q) but was never drawn from q), so the two rules never mix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from . import rows
from .acceptance import TOP_N, NonFiniteError
from .events import Top
from .sampling import sample
from .tree import ROOT, Tree, ancestry


@dataclass(frozen=True, slots=True)
class TreeVerdict:
    """Outcome of the rule on one tree, on the host. Row r of p is the root (r = 0) or node r - 1."""

    path: tuple[int, ...]  # accepted node indices, the root's child first
    next_token: int  # corrected (the stop node had children, all rejected) or bonus (an accepted leaf)
    corrected: bool  # False: a bonus (or, with an empty tree, a plain target token)
    tested: tuple[int, ...]  # nodes whose coin was looked at, in test order
    u: tuple[float, ...]  # per tested node: its uniform; it was accepted when u < accept_prob
    accept_prob: tuple[float, ...]  # per tested node: p'(x), p at the parent renormalised after earlier siblings
    residual: tuple[float, ...]  # per tested node: the mass of p (at the parent) p' keeps once x is zeroed
    p_x: tuple[float, ...]  # [n] per node: p at its parent for its token
    p_next: float  # p(next_token) at the stop node, before zeroing its children
    top_p: tuple[Top, ...]  # top entries of p at the root and at each accepted node
    next_top: Top  # top entries of the distribution next_token was drawn from (p' or p)

    @property
    def n_accepted(self) -> int:
        return len(self.path)

    @property
    def stop(self) -> int:
        """The node the round ended at (ROOT when the root's children were all rejected)."""
        return self.path[-1] if self.path else ROOT


@dataclass(frozen=True, slots=True)
class TreeLayout:
    """The tree's structure as tensors, built once per tree (host work, no sync)."""

    tokens: torch.Tensor  # [n] long
    rows: torch.Tensor  # [n] long: the p row of each node's parent (parent + 1)
    earlier: torch.Tensor  # [n, n] float64: [i, j] = 1 when j is an earlier sibling of i
    first: torch.Tensor  # [n] float64: 0 when an earlier sibling proposes the same token (its p' is 0 already)
    ancestry: torch.Tensor  # [n, n] float64: [i, j] = 1 when j is i or an ancestor of i
    kids: torch.Tensor  # [n + 1, n] bool: [r, i] when node i is a child of row r
    depth: torch.Tensor  # [n] long


def layout(tree: Tree, device=None) -> TreeLayout:
    n = len(tree)
    parents = torch.tensor(tree.parents, dtype=torch.long).view(-1)
    tokens = torch.tensor(tree.tokens, dtype=torch.long).view(-1)
    same_parent = parents[:, None] == parents[None, :]
    earlier = same_parent & (torch.arange(n)[None, :] < torch.arange(n)[:, None])  # [n, n]
    first = ~(earlier & (tokens[:, None] == tokens[None, :])).any(-1)
    kids = torch.zeros(n + 1, n, dtype=torch.bool)
    kids[parents + 1, torch.arange(n)] = True
    return TreeLayout(
        tokens.to(device), (parents + 1).to(device), earlier.double().to(device), first.double().to(device),
        ancestry(tree).double().to(device), kids.to(device),
        torch.tensor(tree.depth, dtype=torch.long).view(-1).to(device),
    )


def sibling_mass(total: torch.Tensor, earlier: torch.Tensor, p_eff: torch.Tensor) -> torch.Tensor:
    """Mass of p' before each node's test, in units of p at its parent: total minus earlier siblings' p.

    total [n] float64 (sum of p at each node's parent), earlier [n, n], p_eff [n] -> [n] float64.
    u < p'(x) is tested as u * mass < p(x), which is the renormalisation without a division.
    """
    return total - earlier @ p_eff


def stop_distribution(p_row: torch.Tensor, kid_tokens: torch.Tensor, kid: torch.Tensor) -> torch.Tensor:
    """p at the stop node [V] with its children's tokens zeroed: the final p' (p itself at a leaf).

    kid_tokens [n], kid [n] bool (which of them are the stop node's children). A zero-sum result means
    the children held all of p's mass and were all rejected, which has probability zero but can happen
    by rounding: p is used then, so a token is always defined.
    """
    zeroed = torch.zeros_like(p_row).scatter_add_(0, kid_tokens, kid.to(p_row.dtype)) > 0
    dist = p_row.masked_fill(zeroed, 0.0)
    return torch.where(dist.sum() > 0, dist, p_row)


class RuleOutcome(NamedTuple):
    ok: torch.Tensor  # [n] bool: u_i < p'(x_i), whether or not node i was reached
    stop_row: torch.Tensor  # [] long: the p row the round ended at (0: the root)
    dist: torch.Tensor  # [V] the final draw's distribution (unnormalised p')
    p_x: torch.Tensor  # [n] float64: p at the parent for the node's token
    accept_prob: torch.Tensor  # [n] float64: p'(x_i) once the earlier siblings are rejected
    residual: torch.Tensor  # [n] float64: the mass of p at the parent that p' keeps once x_i is zeroed too


def tree_rule(p: torch.Tensor, lay: TreeLayout, u: torch.Tensor) -> RuleOutcome:
    """The rule as a pure function of its coins, on the device, no host sync.

    p [n + 1, V] (row 0 at the root, row 1 + i after node i), u [n] float64 (one coin per node).
    Node i counts as accepted only when its parent is on the path and no earlier sibling was accepted.
    """
    n = lay.tokens.shape[0]
    p_x = p[lay.rows, lay.tokens].double()  # [n]
    p_eff = p_x * lay.first  # a repeated sibling token was zeroed by the first copy's rejection
    total = p.sum(-1, dtype=torch.float64)[lay.rows]  # [n], ~1
    mass = sibling_mass(total, lay.earlier, p_eff)  # [n]
    ok = u * mass < p_eff  # [n]
    first_ok = ok & ~((lay.earlier @ ok.double()) > 0)  # the first accepted child of its parent
    on_path = first_ok & ((lay.ancestry @ (~first_ok).double()) == 0)  # [n]: so are all its ancestors
    if n:
        reach = torch.where(on_path, lay.depth + 1, 0)  # the path is a chain: its deepest node ends it
        stop_row = torch.where(reach.max() > 0, reach.argmax() + 1, 0)
    else:
        stop_row = torch.zeros((), dtype=torch.long, device=p.device)
    dist = stop_distribution(p[stop_row], lay.tokens, lay.kids[stop_row])
    accept_prob = torch.where(mass > 0, p_eff / mass.clamp_min(torch.finfo(mass.dtype).tiny), 1.0).clamp(0, 1)
    return RuleOutcome(ok, stop_row, dist, p_x, accept_prob, (mass - p_eff).clamp_min(0.0))


def walk(tree: Tree, ok: list[bool]) -> tuple[list[int], list[int]]:
    """(path, tested) on the host: the first accepted child at each node, from the root down."""
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(tree.parents):
        children.setdefault(parent, []).append(i)
    path, tested, node = [], [], ROOT
    while True:
        for child in children.get(node, ()):
            tested.append(child)
            if ok[child]:
                path.append(child)
                node = child
                break
        else:
            return path, tested


def accept_tree(p: torch.Tensor, tree: Tree, generator: torch.Generator, greedy: bool = False,
                lay: TreeLayout | None = None, before_sync: Callable[[], None] | None = None) -> TreeVerdict:
    """The rule with fresh coins: one uniform per node, then the final draw's own. One host sync.

    p [n + 1, V] from a tree pass (tree_verify), row 0 at the root. greedy: p is one-hot, so the argmax child is accepted at
    every node and the final draw is the argmax: the output follows target-only greedy token for token.
    lay: `layout(tree, device)` built before the verify pass was launched; built here otherwise, where on
    a GPU its host-to-device copies would wait for the pass (a second sync). before_sync: called once the
    device work is queued, just before the sync (a static runner's clock mark).
    """
    n = len(tree)
    lay = lay if lay is not None else layout(tree, p.device)
    u = torch.rand(n, generator=generator, device=p.device, dtype=torch.float64)
    r = tree_rule(p, lay, u)
    y = sample(r.dist, generator, greedy)
    k = min(TOP_N, p.shape[-1])
    top_p, top_dist = rows.topk(p, k), rows.topk(r.dist[None], k)  # [n + 1, k], [1, k]: no cat of vocabulary rows
    values, ids = torch.cat([top_p[0], top_dist[0]]), torch.cat([top_p[1], top_dist[1]])  # [n + 2, k]
    head = torch.stack([r.stop_row.double(), y.double(), p[r.stop_row, y].double(), rows.finite_probs(p).double()[0]])
    fields = [r.ok.double(), u, r.p_x, r.accept_prob, r.residual]
    packed = torch.cat([head, *fields, values.double().ravel(), ids.double().ravel()])
    if before_sync is not None:
        before_sync()
    host = packed.tolist()  # the only sync
    if not host[3]:
        raise NonFiniteError("target")
    ok, u_h, p_x, accept_prob, residual = (host[4 + j * n : 4 + (j + 1) * n] for j in range(len(fields)))
    o = 4 + len(fields) * n
    vals, idxs = host[o : o + (n + 2) * k], host[o + (n + 2) * k :]
    tops = [
        tuple((int(idxs[r * k + j]), vals[r * k + j]) for j in range(k) if vals[r * k + j] > 0) for r in range(n + 2)
    ]
    path, tested = walk(tree, [bool(b) for b in ok])
    assert (path[-1] + 1 if path else 0) == int(host[0]), "the device's stop node differs from the host walk"
    stop = path[-1] if path else ROOT
    return TreeVerdict(
        path=tuple(path), next_token=int(host[1]), corrected=stop in tree.parents, tested=tuple(tested),
        u=tuple(u_h[i] for i in tested), accept_prob=tuple(accept_prob[i] for i in tested),
        residual=tuple(residual[i] for i in tested), p_x=tuple(p_x), p_next=host[2],
        top_p=tuple(tops[row] for row in (0, *(i + 1 for i in path))), next_top=tops[-1],
    )
