"""The live γ controllers: between rounds, γ (or a tree's measured size) follows the live acceptance and costs.

Each is a protocols.LiveController. Feed every RoundEvent to observe(); gamma() is the value for the next
round. They are only ever used through the params callable, so they change speed, never the output.
"""

from __future__ import annotations

from dataclasses import replace

from ..events import RoundEvent
from .cost import (
    AUTO_GAMMA_MAX,
    TREE_DEPTH,
    DrafterProfile,
    VerifyCosts,
    best_gamma,
    expected_tokens,
    speedup,
    tree_accepted,
)
from .live_verify import LiveVerify

LIVE_WEIGHT = 0.15  # weight of each new round in the live estimates (exponential moving average)
DROP_AFTER = 16  # live rounds before a drafter predicted slower than target-only stops proposing (γ 0)
EXPLORE_EVERY = 16  # while it is stopped, one round in this many drafts again, so its live figures can recover
AUTO_GAMMA_START = 4  # γ 'auto' asks for this until a live controller's choice replaces it


class AutoGamma:
    """γ re-chosen between rounds from the live α per position, c and verify cost of the running drafter.

    The calibration gives v(n) in seconds at two or three contexts; each round is priced at its own context
    (VerifyCosts.at), live rounds scale it (machine load moves every forward alike) and shift its extra rows
    (LiveVerify), and update α and the draft's seconds per token. After DROP_AFTER live rounds a drafter the
    live figures predict slower than target-only stops: γ 0 (target steps) but for one round in EXPLORE_EVERY.
    Feed every RoundEvent to observe(); gamma() is the value for the next round. Only ever used through the
    params callable, so it changes speed, not output.
    """

    def __init__(self, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int = AUTO_GAMMA_MAX,
                 weight: float = LIVE_WEIGHT) -> None:
        self.verify = verify
        self.gamma_max = gamma_max
        self.weight = weight
        self.calibrated = [profile.alpha_at(i) for i in range(1, gamma_max + 1)]
        self.alphas = list(self.calibrated)
        self.seen = [0] * gamma_max  # live rounds that scored each draft position
        self.draft_s = profile.c * verify.step  # seconds per drafted token
        self.c_round = profile.c_round  # a round's fixed draft cost, in target steps: kept as calibrated
        self.live = LiveVerify(verify, weight)  # v(n) as this chat's rounds pay it, once a live step is known
        self.scale = 1.0  # live verify time / calibrated verify time
        self.coverage = profile.coverage
        self.name, self.label = profile.name, profile.label
        self.rounds = 0
        self.idle = 0  # rounds without a draft since the last that drafted
        self.context = verify.context  # tokens before the next round
        self.verify = self.live.at(self.context)
        self._gamma, self._predicted = best_gamma(self.profile, self.verify, gamma_max)

    @property
    def profile(self) -> DrafterProfile:
        c = self.draft_s / (self.verify.step * self.scale)
        alphas = self.live_alphas()
        alpha = sum(alphas) / len(alphas)
        return DrafterProfile(self.name, self.label, c, alpha, alphas, self.coverage, c_round=self.c_round)

    def live_alphas(self) -> tuple[float, ...]:
        """α per draft position as the live rounds measure it. A position no live round has scored yet (a γ
        never proposed that far) follows the deepest scored one, keeping the calibrated shape (its calibrated
        α against that position's calibrated α): left at the probe's figure it held γ short, since a
        position is only ever scored once γ reaches it."""
        deepest = max((i for i, n in enumerate(self.seen) if n), default=-1)
        if deepest < 0:
            return tuple(self.alphas)
        live, base = self.alphas[deepest], self.calibrated[deepest]
        ratio = live / base if base > 0 else 1.0
        return tuple(self.alphas[: deepest + 1]) + tuple(
            min(1.0, (a * ratio) if base > 0 else live) for a in self.calibrated[deepest + 1:])

    def observe_step(self, seconds: float) -> None:
        """A target-only step of the real loop in this chat (the window's speedup baseline): with it, live
        multi-row rounds price v(n) as the chat pays it (live_verify.py)."""
        self.live.observe(1, seconds)
        self.verify = self.live.at(self.context)

    def observe(self, r: RoundEvent) -> None:
        self.context = r.context + r.emitted
        if r.round == 0:  # the first round carries the prompt's prefill in both timings
            self.verify = self.live.at(self.context)
            return
        self.live.observe(r.drafted + 1, r.verify_time, r.context)
        self.idle = 0 if r.drafted else self.idle + 1
        w = self.weight
        self.coverage += w * ((1.0 if r.drafted else 0.0) - self.coverage)
        if r.drafted:
            # Positions after the first rejection were scored on a context the output never had.
            for i, a in enumerate(r.overlap[: min(r.accepted + 1, r.drafted, self.gamma_max)]):
                if not self.seen[i]:  # first scored: start from where the deeper estimate stood
                    self.alphas[i] = self.live_alphas()[i]
                self.alphas[i] += w * (a - self.alphas[i])
                self.seen[i] += 1
            token_s = (r.draft_time - self.c_round * self.verify.step * self.scale) / r.drafted
            self.draft_s += w * (max(0.0, token_s) - self.draft_s)
        n = r.drafted + 1
        calibrated = self.verify.v(n) * self.verify.step  # this round's costs, at its own context
        if r.verify_time > 0 and calibrated > 0:
            self.scale += w * (r.verify_time / calibrated - self.scale)
        self.rounds += 1
        self.verify = self.live.at(self.context)  # the next round's
        self._gamma, self._predicted = best_gamma(self.profile, self.verify, self.gamma_max)

    @property
    def stopped(self) -> bool:
        """Whether the live figures say drafting loses, so rounds are target steps (but exploring ones)."""
        return self.rounds >= DROP_AFTER and self._predicted < 1.0

    def gamma(self) -> int:
        if self.stopped and self.idle < EXPLORE_EVERY:
            return 0
        return self._gamma

    @property
    def predicted(self) -> float:
        """Predicted speedup over target-only at the current γ, from the live estimates."""
        return self._predicted

    @property
    def tokens_per_round(self) -> float:
        """E[tokens a round] at the current γ, from the live estimates."""
        return expected_tokens(self.profile, self._gamma)


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
        self.pass_s: float | None = None  # seconds of a live tree pass
        self.step: float | None = None  # seconds of a live target-only step in this chat, when known
        self.rounds = 0

    @property
    def profile(self) -> DrafterProfile:
        c = self.draft_s / (self.verify.step * self.scale)
        return replace(self.base, tree_accepted=self.base.tree_accepted[: self.nodes - 1] + (self.accepted,), tree_c=c)

    def observe_step(self, seconds: float) -> None:
        """A target-only step of the real loop in this chat: live tree rounds are then priced against it."""
        if seconds > 0:
            self.step = seconds if self.step is None else self.step + self.weight * (seconds - self.step)

    def observe(self, r: RoundEvent) -> None:
        if r.round == 0 or not r.tree_tokens:  # the prefill round; a round with no tree proposed
            return
        w = self.weight
        self.accepted += w * (r.accepted - self.accepted)
        self.draft_s += w * (r.draft_time - self.draft_s)
        self.pass_s = r.verify_time if self.pass_s is None else self.pass_s + w * (r.verify_time - self.pass_s)
        calibrated = self.verify.v_tree(r.tree_nodes + 1) * self.verify.step
        if r.verify_time > 0 and calibrated > 0:
            self.scale += w * (r.verify_time / calibrated - self.scale)
        self.rounds += 1

    def gamma(self) -> int:
        return self.depth

    @property
    def predicted(self) -> float:
        if self.step is not None and self.pass_s is not None:  # the chat's own round against its own step
            return self.tokens_per_round / ((self.draft_s + self.pass_s) / self.step)
        return speedup(self.profile, self.depth, self.verify, self.nodes)

    @property
    def tokens_per_round(self) -> float:
        """E[tokens a round]: the accepted nodes (live) and the target's own token."""
        return 1.0 + self.accepted
