"""Statistics over RoundEvents, and the speedup model of Leviathan et al. (section 3.4)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .events import RoundEvent
from .policy import DrafterProfile, VerifyCosts, chain_speedup, speedup


def acceptance_histogram(rounds: Iterable[RoundEvent], gamma: int) -> list[int]:
    """Counts of rounds by accepted drafts, index 0..gamma (rounds with no draft are skipped)."""
    counts = [0] * (gamma + 1)
    for r in rounds:
        if r.drafted:
            counts[min(r.accepted, gamma)] += 1
    return counts


def per_position_acceptance(rounds: Iterable[RoundEvent], gamma: int) -> list[float | None]:
    """Fraction of drafts accepted at slot 1..gamma, among rounds that tested that slot."""
    tested = [0] * gamma
    passed = [0] * gamma
    for r in rounds:
        # Slots up to the first rejection were tested; later slots never were.
        for i in range(min(r.drafted, r.accepted + 1, gamma)):
            tested[i] += 1
            passed[i] += i < r.accepted
    return [passed[i] / tested[i] if tested[i] else None for i in range(gamma)]


def alpha_estimate(rounds: Iterable[RoundEvent]) -> float | None:
    """Mean exact overlap sum_x min(p, q) over all drafted positions (alpha = 1 - TV(p, q))."""
    values = [a for r in rounds for a in r.overlap]
    return sum(values) / len(values) if values else None


def alpha_from_acceptances(rounds: Iterable[RoundEvent]) -> float | None:
    """Maximum-likelihood alpha from accept/reject outcomes alone (accepted / tested)."""
    accepted = tested = 0
    for r in rounds:
        accepted += r.accepted
        tested += min(r.drafted, r.accepted + 1)
    return accepted / tested if tested else None


def expected_tokens_per_round(alpha: float, gamma: int) -> float:
    """E[N] = (1 - alpha^(gamma+1)) / (1 - alpha)."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def predicted_speedup(alpha: float, gamma: int, c: float, verify_cost: float = 1.0) -> float:
    """(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + verify_cost)); verify_cost = 1 is the paper's. The
    policy's formula (policy.speedup, through chain_speedup), so measured and calibrated predictions agree."""
    return chain_speedup(alpha, gamma, c, verify_cost)


@dataclass(frozen=True, slots=True)
class Summary:
    rounds: int
    new_tokens: int
    tokens_per_round: float
    alpha: float | None
    alpha_mle: float | None
    histogram: list[int]
    per_position: list[float | None]
    draft_time: float
    verify_time: float
    draft_time_per_token: float | None  # seconds per drafted token


def summarize(rounds: Sequence[RoundEvent], gamma: int) -> Summary:
    drafted = sum(r.drafted for r in rounds)
    draft_time = sum(r.draft_time for r in rounds)
    emitted = sum(r.emitted for r in rounds)
    return Summary(
        rounds=len(rounds),
        new_tokens=emitted,
        tokens_per_round=emitted / len(rounds) if rounds else 0.0,
        alpha=alpha_estimate(rounds),
        alpha_mle=alpha_from_acceptances(rounds),
        histogram=acceptance_histogram(rounds, gamma),
        per_position=per_position_acceptance(rounds, gamma),
        draft_time=draft_time,
        verify_time=sum(r.verify_time for r in rounds),
        draft_time_per_token=draft_time / drafted if drafted else None,
    )


@dataclass(frozen=True, slots=True)
class RoundShape:
    """What a tree changes against a chain, per round: more tokens out for more tokens verified."""

    rounds: int
    tokens_per_round: float  # tokens emitted per round
    verified_per_round: float  # tokens through the verify pass per round (RoundEvent.verified)
    tree_nodes: float | None  # mean nodes of the tree rounds; None when no round verified a tree


def round_shape(rounds: Sequence[RoundEvent]) -> RoundShape | None:
    """The shape of the played rounds: the first round is left out (it carries the prefill, and the bench
    leaves it out too) unless it is the only one. None before any round."""
    played = list(rounds[1:] or rounds)
    if not played:
        return None
    trees = [r.tree_nodes for r in played if r.tree_tokens]
    n = len(played)
    return RoundShape(n, sum(r.emitted for r in played) / n, sum(r.verified for r in played) / n,
                      sum(trees) / len(trees) if trees else None)


# Measured against target-only: baseline_step is target-only seconds per token, timed on this machine. The
# first round is left out of both: it carries the prompt's prefill.


def speedup_series(rounds: Sequence[RoundEvent], baseline_step: float | None) -> tuple[list[int], list[float]]:
    """Measured speedup after each round (x = tokens so far): baseline_step * tokens / seconds. Empty on a
    target-only answer (no round drafted): its clock holds per-round overhead the baseline's timed steps do
    not, so it read 0.84× against itself, a slowdown that is no draft's."""
    if not baseline_step or not any(r.drafted for r in rounds):
        return [], []
    xs, ys = [], []
    tokens = seconds = 0.0
    for r in rounds[1:]:
        tokens += r.emitted
        seconds += r.draft_time + r.verify_time
        if seconds > 0:
            xs.append(int(tokens))
            ys.append(baseline_step * tokens / seconds)
    return xs, ys


def cost_ratios(rounds: Sequence[RoundEvent], baseline_step: float | None) -> tuple[float, float] | None:
    """(c, verification cost) in target steps, from the drafted rounds' timings: predicted_speedup's inputs."""
    drafted = [r for r in rounds[1:] if r.drafted]
    if not baseline_step or not drafted:
        return None
    c = sum(r.draft_time for r in drafted) / sum(r.drafted for r in drafted) / baseline_step
    verify = sum(r.verify_time for r in drafted) / len(drafted) / baseline_step
    return c, verify


def answer_speedup(rounds: Sequence[RoundEvent], alpha: float | None, baseline_step: float | None) -> float | None:
    """Leviathan et al.'s formula on one answer's own figures: the speedup plot's "this answer so far" and
    the server's predicted speedup. α is the answer's pooled acceptance. γ is the mean length of the
    proposals it made. c and the verify cost come from the drafted rounds' timings (cost_ratios). The share
    of rounds that proposed anything weighs them against target steps: per-round lookup proposes in only
    some rounds, and the formula at full share read 2.52x beside 1.94x measured. None before a round drafted."""
    costs = cost_ratios(rounds, baseline_step)
    played = list(rounds[1:])
    drafted = [r for r in played if r.drafted]
    if alpha is None or costs is None or not drafted:
        return None
    c, verify = costs
    gamma = max(1, round(sum(r.drafted for r in drafted) / len(drafted)))
    profile = DrafterProfile("", "", c, alpha, coverage=len(drafted) / len(played))
    return speedup(profile, gamma, VerifyCosts((1.0,) * gamma + (verify,)))


def mean_accepted(rounds: Sequence[RoundEvent]) -> float | None:
    """Draft tokens accepted per round, over the rounds that drafted."""
    drafted = [r for r in rounds if r.drafted]
    return sum(r.accepted for r in drafted) / len(drafted) if drafted else None
