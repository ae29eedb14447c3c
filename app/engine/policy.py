"""Choosing the drafter and γ by measured cost (Leviathan et al. section 3.4 with a measured verify cost).

A round with γ drafts emits E[N] = (1 − α^(γ+1)) / (1 − α) tokens on average (or 1 + α₁ + α₁α₂ + …
when the acceptance per draft position is known) and costs γ·c + v(γ+1) target steps, where c is one
drafted token's cost and v(n) the cost of one target pass over n tokens, both measured on this
machine. Target-only decoding costs v(1) = 1 per token, so the predicted speedup of a drafter at γ is
E[N] / (γ·c + v(γ+1)). A token tree of n nodes is the same formula with E[N] = 1 + E[accepted](n),
measured per node budget, one tree draft's cost and v_tree(n + 1) (a tree pass, timed as such): the
node budget, chain or tree, and no draft at all are chosen by one number. Pure arithmetic: no torch. γ and the node budget only change
speed, never the output's distribution, so nothing here can affect exactness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .events import RoundEvent

TREE_NODES_MAX = 32  # the largest tree auto sizing considers (v(n) is measured up to TREE_NODES_MAX + 1 tokens)
TREE_DEPTH = 6  # levels of an auto-sized tree: expansion costs one draft pass per level, whatever the budget
AUTO_GAMMA_MAX = 8  # auto γ searches 1..AUTO_GAMMA_MAX (verify cost is measured up to AUTO_GAMMA_MAX + 1 tokens); params.GAMMA_LIMIT bounds a hand-set γ
MARGIN = 1.03  # a drafter must be predicted this much faster than target-only, or it is not worth the risk
LIVE_WEIGHT = 0.15  # weight of each new round in the live estimates (exponential moving average)
AUTO_GAMMA_START = 4  # γ 'auto' asks for this until a live controller's choice replaces it
RECHECK_ROUNDS = 12  # live rounds before the load-time choice is second-guessed
MEASURED_FLOOR = 0.9  # an answer measured this much slower than target-only ends auto's draft at once
MEASURED_TOKENS = 16  # ... when it had at least this many tokens (shorter ones are mostly prefill)
# A front end's token-tree switch as the policy's `tree` argument: None lets the measurement choose.
TREE_MODES: dict[str, bool | None] = {"auto": None, "on": True, "off": False}


@dataclass(frozen=True, slots=True)
class VerifyCosts:
    """Seconds of one target pass over n new tokens after a cached context, n = 1..len(seconds), with the
    head applied at every position, as the engine does; `head` is one head row's seconds (reported).
    `tree_seconds`: the same for a token tree's pass (the root and n - 1 nodes under a 4D mask), timed as
    such because it is not a chain pass's cost: on the bf16 CPU path (row-exact attention under a mask)
    a 17-token tree pass measured 5.9 target steps against 3.6 for a chain pass at the 335-token probe context
    (busy machine). () when unmeasured (a target that takes no tree): v(n) stands in."""

    seconds: tuple[float, ...]
    head: float = 0.0
    tree_seconds: tuple[float, ...] = ()

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
        if n <= len(seconds):
            return seconds[n - 1] / self.step
        last = seconds[-1] / self.step
        slope = (seconds[-1] - seconds[-2]) / self.step if len(seconds) > 1 else 1.0
        return last + max(slope, 0.0) * (n - len(seconds))


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
    step per token, for a γ chain, or (nodes > 0) for its tree of that many nodes. A round without a
    proposal is a plain target step."""
    cover = profile.coverage
    if nodes:
        emitted, draft, verified = 1 + tree_accepted(profile, nodes), profile.tree_c, verify.v_tree(nodes + 1)
    else:
        emitted, draft, verified = expected_tokens(profile, gamma), gamma * profile.c, verify.v(gamma + 1)
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


def best_gamma(profile: DrafterProfile, verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX) -> tuple[int, float]:
    """(γ, predicted speedup) maximising the speedup over 1..gamma_max; the smaller γ on ties."""
    return _argmax(lambda gamma: speedup(profile, gamma, verify), gamma_max)


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


@dataclass(frozen=True, slots=True)
class Limit:
    """What limits a drafter, as data: the GUI words it in the user's language, `text` is the English."""

    kind: str  # "cost" (c), "coverage" (share of rounds it proposes in), "acceptance" (α against v(γ+1)),
    # or "tree": why its best tree loses to its chain (value: E[accepted] of that tree, verify: v_tree(nodes + 1))
    value: float  # c, the coverage, α, or the tree's E[accepted]
    verify: float  # v(γ+1) in target steps (a tree: v_tree(nodes + 1))
    device: str  # "CPU", "CUDA", "MPS"
    nodes: int = 0  # "tree": the best tree's node budget

    @property
    def text(self) -> str:
        if self.kind == "tree":
            return (f"a tree does not pay here: its best, {self.nodes} nodes, accepts {self.value:.2f} tokens a round "
                    f"for a verify cost of {self.verify:.2f} target steps")
        if self.kind == "cost":
            return f"draft costs {self.value:.2f} target steps on this {self.device}"
        if self.kind == "coverage":
            return f"it proposes in only {self.value:.0%} of rounds here"
        return f"acceptance α {self.value:.2f} is too low for a verify cost of {self.verify:.2f} target steps"


@dataclass(frozen=True, slots=True)
class Option:
    name: str
    label: str
    gamma: int  # γ, or a tree's depth
    predicted: float
    limit: Limit
    nodes: int = 0  # a tree's node budget; 0: a chain
    tree: Limit | None = None  # why its tree lost to its chain, when it has a measured tree

    @property
    def why(self) -> str:  # e.g. "draft costs 1.05 target steps on this CPU"
        return self.limit.text


@dataclass(frozen=True, slots=True)
class Choice:
    drafter: str | None  # the chosen profile's name; None: target-only
    gamma: int  # the best γ for it (the live controller moves it later); a tree's depth
    predicted: float  # predicted speedup over target-only (1.0 for target-only)
    reason: str  # one line for the status bar
    options: tuple[Option, ...] = field(default=())  # every drafter's best, fastest first
    nodes: int = 0  # the chosen tree's node budget; 0: a chain (or target-only)

    @property
    def tree(self) -> bool:
        return self.nodes > 0

    @property
    def tree_limit(self) -> Limit | None:
        """Why the chosen drafter runs a chain although it has a tree (None otherwise)."""
        return self.options[0].tree if self.options and not self.tree and not self.target_only else None

    @property
    def target_only(self) -> bool:
        return self.drafter is None


def limit_of(profile: DrafterProfile, gamma: int, verify: VerifyCosts, device: str = "CPU") -> Limit:
    """The main reason a drafter does not pay: its cost, its acceptance, or the verify pass."""
    v = verify.v(gamma + 1)
    if profile.c >= 0.5:
        return Limit("cost", profile.c, v, device)
    if profile.coverage < 0.5:
        return Limit("coverage", profile.coverage, v, device)
    return Limit("acceptance", profile.alpha, v, device)


def option_for(profile: DrafterProfile, verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX,
               device: str = "CPU", tree: bool | None = None) -> Option:
    """A drafter's best form: its best chain, or its best tree when it has one and it is predicted faster.
    tree: None chooses by prediction, True forces the tree (when measured), False the chain."""
    gamma, s = best_gamma(profile, verify, gamma_max)
    chain = Option(profile.name, profile.label, gamma, s, limit_of(profile, gamma, verify, device))
    nodes, t = best_nodes(profile, verify)
    if not nodes or tree is False:
        return chain
    if tree or t > s + 1e-9:
        limit = limit_of(profile, TREE_DEPTH, verify, device)
        return Option(profile.name, profile.label, TREE_DEPTH, t, limit, nodes)
    why = Limit("tree", tree_accepted(profile, nodes), verify.v_tree(nodes + 1), device, nodes)
    return Option(chain.name, chain.label, chain.gamma, chain.predicted, chain.limit, 0, why)


def describe(option: Option) -> str:
    """The chosen form in one phrase: "trained draft, γ 4" or "trained draft, tree of 12 nodes"."""
    form = f"tree of {option.nodes} nodes" if option.nodes else f"γ {option.gamma}"
    return f"{option.label}, {form}"


def choose(
    profiles: Sequence[DrafterProfile], verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX,
    margin: float = MARGIN, device: str = "CPU", tree: bool | None = None,
) -> Choice:
    """The drafter and its form (γ chain or sized tree) with the best predicted speedup, or target-only
    when none beats it by `margin`. tree: None (auto) lets the prediction choose chain or tree."""
    options = [option_for(p, verify, gamma_max, device, tree) for p in profiles]
    options.sort(key=lambda o: -o.predicted)
    if options and options[0].predicted >= margin:
        best = options[0]
        reason = f"{describe(best)}: predicted {best.predicted:.2f}× target-only"
        if best.tree is not None:
            reason += f" ({best.tree.text})"
        return Choice(best.name, best.gamma, best.predicted, reason, tuple(options), best.nodes)
    if not options:
        return Choice(None, 1, 1.0, "target-only: no drafter available", ())
    why = "; ".join(f"{o.label} {o.predicted:.2f}×: {o.why}" for o in options)
    reason = f"target-only: no draft is predicted to be faster on this {device} ({why})"
    return Choice(None, 1, 1.0, reason, tuple(options))


class AutoGamma:
    """γ re-chosen between rounds from the live α per position, c and verify cost of the running drafter.

    The calibration gives v(n) in seconds; live rounds scale it (machine load moves every forward alike)
    and update α and the draft's seconds per token. Feed every RoundEvent to observe(); gamma() is the
    value for the next round. Only ever used through the params callable, so it changes speed, not output.
    """

    def __init__(self, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX,
                 weight: float = LIVE_WEIGHT) -> None:
        self.verify = verify
        self.gamma_max = gamma_max
        self.weight = weight
        self.alphas = [profile.alpha_at(i) for i in range(1, gamma_max + 1)]
        self.draft_s = profile.c * verify.step  # seconds per drafted token
        self.scale = 1.0  # live verify time / calibrated verify time
        self.coverage = profile.coverage
        self.name, self.label = profile.name, profile.label
        self.rounds = 0
        self._gamma, self._predicted = best_gamma(self.profile, verify, gamma_max)

    @property
    def profile(self) -> DrafterProfile:
        c = self.draft_s / (self.verify.step * self.scale)
        alpha = sum(self.alphas) / len(self.alphas)
        return DrafterProfile(self.name, self.label, c, alpha, tuple(self.alphas), self.coverage)

    def observe(self, r: RoundEvent) -> None:
        if r.round == 0:  # the first round carries the prompt's prefill in both timings
            return
        w = self.weight
        self.coverage += w * ((1.0 if r.drafted else 0.0) - self.coverage)
        if r.drafted:
            # Positions after the first rejection were scored on a context the output never had.
            for i, a in enumerate(r.overlap[: min(r.accepted + 1, r.drafted, self.gamma_max)]):
                self.alphas[i] += w * (a - self.alphas[i])
            self.draft_s += w * (r.draft_time / r.drafted - self.draft_s)
        n = r.drafted + 1
        calibrated = self.verify.v(n) * self.verify.step
        if r.verify_time > 0 and calibrated > 0:
            self.scale += w * (r.verify_time / calibrated - self.scale)
        self.rounds += 1
        self._gamma, self._predicted = best_gamma(self.profile, self.verify, self.gamma_max)

    def gamma(self) -> int:
        return self._gamma

    @property
    def predicted(self) -> float:
        """Predicted speedup over target-only at the current γ, from the live estimates."""
        return self._predicted


class TreeSize:
    """The live counterpart of AutoGamma for a tree choice: depth (γ) and node budget stay as measured;
    live rounds update E[accepted], the tree draft's seconds and the verify scale, so `predicted` and
    `profile` follow the machine as AutoGamma's do (same attributes, so callers need not ask which)."""

    def __init__(self, profile: DrafterProfile, verify: VerifyCosts, nodes: int, depth: int = TREE_DEPTH,
                 weight: float = LIVE_WEIGHT) -> None:
        self.base, self.verify, self.nodes, self.depth, self.weight = profile, verify, nodes, depth, weight
        self.name, self.label, self.gamma_max = profile.name, profile.label, depth
        self.accepted = tree_accepted(profile, nodes)
        self.draft_s = profile.tree_c * verify.step  # seconds per tree draft
        self.scale = 1.0  # live verify time / calibrated verify time
        self.rounds = 0

    @property
    def profile(self) -> DrafterProfile:
        c = self.draft_s / (self.verify.step * self.scale)
        return replace(self.base, tree_accepted=self.base.tree_accepted[: self.nodes - 1] + (self.accepted,), tree_c=c)

    def observe(self, r: RoundEvent) -> None:
        if r.round == 0 or not r.tree_tokens:  # the prefill round; a round with no tree proposed
            return
        w = self.weight
        self.accepted += w * (r.accepted - self.accepted)
        self.draft_s += w * (r.draft_time - self.draft_s)
        calibrated = self.verify.v_tree(r.tree_nodes + 1) * self.verify.step
        if r.verify_time > 0 and calibrated > 0:
            self.scale += w * (r.verify_time / calibrated - self.scale)
        self.rounds += 1

    def gamma(self) -> int:
        return self.depth

    @property
    def predicted(self) -> float:
        return speedup(self.profile, self.depth, self.verify, self.nodes)


@dataclass(frozen=True, slots=True)
class Switch:
    """Why auto drops its draft after live rounds, as data: a front end words it, `text` is the English."""

    kind: str  # "measured": the last answer ran slower than target-only; "predicted": live α and c say so
    speedup: float  # the measured speedup, or the live prediction, that made the switch
    label: str  # the drafter, for people
    alpha1: float = 0.0  # "predicted": the live acceptance at draft position 1
    c: float = 0.0  # "predicted": the live draft cost in target steps

    @property
    def text(self) -> str:
        if self.kind == "measured":
            return (f"Switched to target-only: the last answer ran at {self.speedup:.2f}× target-only with "
                    f"{self.label} (against target-only steps timed in this chat).")
        return (f"Switched to target-only: the live acceptance at draft position 1 (α₁ {self.alpha1:.2f}) and draft "
                f"cost (c {self.c:.2f}) predict {self.label} at {self.speedup:.2f}× target-only on this machine.")


def recheck(live: AutoGamma | TreeSize, measured: float | None, new_tokens: int) -> Switch | None:
    """After an answer with draft 'auto': target-only from now on when the answer measured clearly slower
    than target-only steps timed at the same context (and was long enough to judge), or when after
    RECHECK_ROUNDS live rounds the live α, c and verify cost predict the draft slower (the load-time probe
    was optimistic). None: keep the draft. measured: the answer's measured speedup, None when untimed."""
    if measured is not None and measured < MEASURED_FLOOR and new_tokens >= MEASURED_TOKENS:
        return Switch("measured", measured, live.label)
    if live.rounds >= RECHECK_ROUNDS and live.predicted < 1.0:
        p = live.profile
        return Switch("predicted", live.predicted, p.label, p.alpha_at(1), p.c)
    return None
