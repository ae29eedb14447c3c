"""The cost model (Leviathan et al. section 3.4 with a measured verify cost): what a round yields and costs.

A round with γ drafts emits E[N] = (1 − α^(γ+1)) / (1 − α) tokens on average (or 1 + α₁ + α₁α₂ + …
when the acceptance per draft position is known) and costs γ·c + v(γ+1) target steps, where c is one
drafted token's cost and v(n) the cost of one target pass over n tokens, both measured on this
machine. Target-only decoding costs v(1) = 1 per token, so the predicted speedup of a drafter at γ is
E[N] / (γ·c + v(γ+1)). A token tree of n nodes is the same formula with E[N] = 1 + E[accepted](n),
measured per node budget, one tree draft's cost and v_tree(n + 1) (a tree pass, timed as such).
Pure arithmetic: no torch. γ and the node budget only change speed, never the output's distribution,
so nothing here can affect exactness.
"""

from __future__ import annotations

from dataclasses import dataclass

TREE_NODES_MAX = 32  # the largest tree auto sizing considers (v(n) is measured up to TREE_NODES_MAX + 1 tokens)
TREE_DEPTH = 6  # levels of an auto-sized tree: expansion costs one draft pass per level, whatever the budget
# auto γ searches 1..AUTO_GAMMA_MAX, as far as v(γ + 1) is measured (gamma_bound); params.GAMMA_LIMIT (the same 16)
# bounds a hand-set γ. It was 8, which capped a cheap draft at high α: α 0.97 at c 0.1 pays up to γ 16.
AUTO_GAMMA_MAX = 16
EXTRAPOLATE = 1.5  # v(n) is read at most this far past the longest pass timed (linear past the table)


@dataclass(frozen=True, slots=True)
class VerifyCosts:
    """Seconds of one target pass over n new tokens after a cached context, n = 1..len(seconds), with the
    head applied at every position, as the engine does; `head` is one head row's seconds (reported).
    `tree_seconds`: the same for a token tree's pass (the root and n - 1 nodes under a 4D mask), timed as
    such because it is not a chain pass's cost (docs/engine-notes.md has a measured pair). () when
    unmeasured (a target that takes no tree): v(n) stands in."""

    seconds: tuple[float, ...]
    head: float = 0.0
    tree_seconds: tuple[float, ...] = ()
    # (context tokens, seconds n = 1..) timed after shorter contexts than the reference curve's: a pass's extra
    # rows cost the same whatever the context while one step grows with it, so v(n) is higher in a short chat
    by_context: tuple[tuple[int, tuple[float, ...]], ...] = ()
    context: int = 0  # tokens cached before the reference curve's passes (0: not recorded)
    # Seconds a round that verifies a proposal adds beyond its pass and what a target-only round does anyway:
    # p over more rows, the acceptance, the cache cut back. Measured on the engine's own rounds (timing.py):
    # on the embedded model a 2-row round took 1.13 target-only rounds where the bare passes said 1.00.
    round: float = 0.0

    def at(self, context: int) -> VerifyCosts:
        """The costs of passes after `context` cached tokens: the curves measured at the contexts around it,
        interpolated (the nearest one outside them); these costs themselves where no other curve was timed."""
        curves = sorted([*self.by_context, (self.context, self.seconds)]) if self.by_context and self.context else []
        if not curves:
            return self
        if context <= curves[0][0]:
            seconds = curves[0][1]
        elif context >= curves[-1][0]:
            seconds = curves[-1][1]
        else:
            (c0, s0), (c1, s1) = next((a, b) for a, b in zip(curves, curves[1:], strict=False) if a[0] <= context <= b[0])
            f = (context - c0) / (c1 - c0)
            m = min(len(s0), len(s1))
            seconds = tuple(a + f * (b - a) for a, b in zip(s0[:m], s1[:m], strict=True))
        if seconds is self.seconds:
            return self
        return VerifyCosts(tuple(seconds), self.head, self.tree_seconds, round=self.round)  # a plain curve there

    @property
    def step(self) -> float:
        """One target step: the cost of target-only decoding per token."""
        return self.seconds[0]

    def v(self, n: int) -> float:
        """v(n) in target steps; past the table, extrapolated linearly from its last two points."""
        return self._steps(self.seconds, n)

    def v_tree(self, n: int) -> float:
        """A tree pass over n tokens (the root and n - 1 nodes) in target steps; v(n) where unmeasured."""
        return self._steps(self.tree_seconds, n) if self.tree_seconds else self.v(n)

    def _steps(self, seconds: tuple[float, ...], n: int) -> float:
        extra = self.round / self.step if n > 1 else 0.0  # a pass over a proposal, not a target-only round
        if n <= len(seconds):
            return seconds[n - 1] / self.step + extra
        last = seconds[-1] / self.step
        slope = (seconds[-1] - seconds[-2]) / self.step if len(seconds) > 1 else 1.0
        return last + max(slope, 0.0) * (n - len(seconds)) + extra


@dataclass(frozen=True, slots=True)
class DrafterProfile:
    """What the policy knows about one drafter on this machine and pair."""

    name: str  # the draft spec ("self", "prompt-lookup", a folder, ...)
    label: str  # for people: "bf16 self-draft", "trained draft", ...
    c: float  # one drafted token's time in target steps
    alpha: float  # mean acceptance Σ min(p, q) per drafted position
    per_position: tuple[float, ...] = ()  # acceptance at draft positions 1, 2, ... when known
    coverage: float = 1.0  # share of rounds in which it proposes anything (prompt lookup finds no match)
    # Its token tree, when it has one: E[accepted tokens] per round for a tree of its n = 1, 2, ... best
    # nodes (the target mass p(path) summed over them), and one tree draft's cost in target steps.
    tree_accepted: tuple[float, ...] = ()
    tree_c: float = 0.0
    # A chain round's fixed draft cost beyond γ·c, in target steps: a draft whose weights the target's pass
    # evicts reads them again at each round's first token (measured by timing.probe at γ 1 and PROBE_GAMMA).
    c_round: float = 0.0

    def alpha_at(self, i: int) -> float:
        """Acceptance at draft position i (1-based); the pooled α where positions are unknown."""
        if i <= len(self.per_position):
            return self.per_position[i - 1]
        return self.per_position[-1] if self.per_position else self.alpha


def expected_tokens(profile: DrafterProfile, gamma: int) -> float:
    """E[tokens per round] = 1 + α₁ + α₁α₂ + … + α₁…α_γ; with one α this is (1 − α^(γ+1)) / (1 − α)."""
    total, run = 1.0, 1.0
    for i in range(1, gamma + 1):
        run *= profile.alpha_at(i)
        total += run
    return total


def speedup(profile: DrafterProfile, gamma: int, verify: VerifyCosts, nodes: int = 0) -> float:
    """Predicted tokens/s over target-only: (E[accepted] + 1) / (t_draft + t_verify) against one target
    step per token, for a γ chain (t_draft = c_round + γ c), or (nodes > 0) for its tree of that many nodes. A round without a
    proposal is a plain target step."""
    cover = profile.coverage
    if nodes:
        emitted, draft, verified = 1 + tree_accepted(profile, nodes), profile.tree_c, verify.v_tree(nodes + 1)
    else:
        emitted, draft, verified = expected_tokens(profile, gamma), profile.c_round + gamma * profile.c, verify.v(gamma + 1)
    tokens = cover * emitted + (1 - cover)
    cost = cover * (draft + verified) + (1 - cover) * verify.v(1)
    return tokens / cost


def chain_speedup(alpha: float, gamma: int, c: float, verify_cost: float) -> float:
    """`speedup` for one pooled α and a measured verify cost v(γ+1) (target steps): the same formula, for
    inputs measured from rounds (stats, the plots, the server's usage) rather than a calibration."""
    return speedup(DrafterProfile("", "", c, alpha), gamma, VerifyCosts((1.0,) * gamma + (verify_cost,)))


def tree_accepted(profile: DrafterProfile, nodes: int) -> float:
    """E[accepted] for a tree of `nodes` nodes; past the measured sizes, the largest one's (more nodes
    never accept less, and the measurement stops where extra nodes stopped adding mass)."""
    table = profile.tree_accepted
    return table[min(nodes, len(table)) - 1] if table else 0.0


def gamma_bound(verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX) -> int:
    """The longest γ auto may weigh: at most gamma_max, and v(γ + 1) timed, interpolated, or extrapolated to no
    more than EXTRAPOLATE × the longest pass timed (a guess further out is not a measurement); at least 1."""
    return max(1, min(gamma_max, int(EXTRAPOLATE * len(verify.seconds)) - 1))


def best_gamma(profile: DrafterProfile, verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX) -> tuple[int, float]:
    """(γ, predicted speedup) maximising the predicted tokens per second, E[N](γ) / (c_round + γ c + v(γ + 1)),
    over 1..gamma_bound(verify, gamma_max); the smaller γ on ties. Nothing else caps γ: no step limit between
    rounds, and α per position only as measured (DrafterProfile.alpha_at)."""
    return _argmax(lambda gamma: speedup(profile, gamma, verify), gamma_bound(verify, gamma_max))


def best_nodes(profile: DrafterProfile, verify: VerifyCosts, nodes_max: int = TREE_NODES_MAX) -> tuple[int, float]:
    """(node budget, predicted speedup) of the profile's tree over 1..nodes_max; the smaller on ties.
    (0, 0.0) when it has no measured tree."""
    if not profile.tree_accepted:
        return 0, 0.0
    return _argmax(lambda nodes: speedup(profile, TREE_DEPTH, verify, nodes), nodes_max)


def _argmax(predict, top: int) -> tuple[int, float]:
    best = (1, predict(1))
    for size in range(2, top + 1):
        s = predict(size)
        if s > best[1] + 1e-9:
            best = (size, s)
    return best


