"""The lab's tree example: p at one node and a few deterministic candidates (a one-level tree, e.g. the
draft's top 3), rounds decided by the engine's own one-hot rule (tree_accept.tree_rule, the code that
decides real tree rounds), beside a chain whose one token is sampled from q. Used by the GUI lab and
its tests.

The tree accepts p(S), the target mass of its candidate set; the chain accepts sum min(p, q). Either
way the first emitted token follows p."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from . import tree_accept
from .sampling import sample
from .toy import figures as chain_figures
from .tree import ROOT, make_tree

CANDIDATES = 3


def top_candidates(q: list[float], k: int = CANDIDATES) -> tuple[int, ...]:
    """The k tokens q ranks highest (ties: the lower index first), as a feature draft's tree would."""
    return tuple(sorted(range(len(q)), key=lambda i: (-q[i], i))[:k])


@dataclass(frozen=True, slots=True)
class TreeFigures:
    """What the rule gives for p and the candidates (all exact, no sampling)."""

    tree_mass: float  # p(S): the target mass of the distinct candidates, the chance the tree accepts one
    chain_alpha: float  # sum min(p, q): the chance a chain's one token, sampled from q, is accepted
    reach: tuple[float, ...]  # per candidate: the chance its coin is looked at, 1 - p of earlier candidates
    accept_prob: tuple[float, ...]  # per candidate: p'(x) = p(x) / reach (0 for a repeated token)
    accepted: tuple[float, ...]  # per candidate: P(the round accepts it) = reach * p'(x) = p(x)
    residual: tuple[float, ...]  # [V] the final p': p with the candidates zeroed, renormalised


def figures(p: list[float], q: list[float], candidates: tuple[int, ...]) -> TreeFigures:
    """p, q [V] probabilities; candidates: token indices in test order (repeats allowed)."""
    seen: set[int] = set()
    reach, accept_prob, accepted = [], [], []
    left = 1.0
    for x in candidates:
        px = 0.0 if x in seen else p[x]  # a repeat's p' is 0 already: the first copy's rejection zeroed it
        seen.add(x)
        reach.append(left)
        accept_prob.append(px / left if left > 1e-12 else 0.0)
        accepted.append(px)
        left -= px
    mass = sum(p[x] for x in seen)
    kept = [0.0 if i in seen else v for i, v in enumerate(p)]
    rest = sum(kept)
    residual = [v / rest for v in kept] if rest > 1e-12 else list(p)
    return TreeFigures(mass, chain_figures(p, q, 1, 0.0).alpha, tuple(reach), tuple(accept_prob),
                       tuple(accepted), tuple(residual))


@dataclass
class TreeCounts:
    """Running totals of simulated tree rounds at one node."""

    vocab: int
    candidates: int = CANDIDATES
    rounds: int = 0
    first: list[int] = field(default_factory=list)  # [V] first emitted token of each round: must follow p
    accepted: list[int] = field(default_factory=list)  # per candidate: rounds that accepted it
    any_accepted: int = 0  # rounds that accepted a candidate: estimates p(S)

    def __post_init__(self) -> None:
        self.first = self.first or [0] * self.vocab
        self.accepted = self.accepted or [0] * self.candidates


def simulate(p: torch.Tensor, candidates: tuple[int, ...], rounds: int, generator: torch.Generator,
             counts: TreeCounts | None = None) -> TreeCounts:
    """Run `rounds` rounds of the one-hot rule on a one-level tree and add them to counts. p [V].

    Each round is tree_accept.tree_rule on its own coins (vmapped over the rounds), then the final draw
    from the rule's own distribution; p is the same at every node (a context-free example)."""
    v, k = p.shape[-1], len(candidates)
    counts = counts or TreeCounts(v, k)
    tree = make_tree(candidates, (ROOT,) * k)
    lay = tree_accept.layout(tree)
    rows = p.expand(k + 1, v)  # [k + 1, V]: the root and each candidate see the same p
    u = torch.rand(rounds, k, generator=generator, dtype=torch.float64)  # [R, k] one coin per node
    out = torch.vmap(lambda coins: tree_accept.tree_rule(rows, lay, coins))(u)
    y = sample(out.dist, generator)  # [R] the corrected token (the bonus, after an accepted leaf)
    stop = out.stop_row  # [R] 0: every candidate rejected; else 1 + the accepted candidate
    tokens = lay.tokens
    first = torch.where(stop > 0, tokens[(stop - 1).clamp_min(0)], y)  # [R]
    for j, c in enumerate(torch.bincount(first, minlength=v).tolist()):
        counts.first[j] += c
    for j, c in enumerate(torch.bincount(stop, minlength=k + 1).tolist()[1:]):
        counts.accepted[j] += c
    counts.rounds += rounds
    counts.any_accepted += int((stop > 0).sum())
    return counts
