"""Statistics behind the plots and the status bar, for the current message and the session.

Measured speedup compares real timings on this machine: speculative seconds per emitted token
(prefill round excluded) against target-only seconds per step, timed by the worker on the same
prompt. The plot's "this answer so far" is Leviathan et al.'s formula (app.engine.stats.answer_speedup, the
policy's speedup) on this answer's measured α, γ, c, verification cost and share of proposing rounds; the status bar's
"auto's plan" is the same formula on the calibration's figures, before the answer (app/gui/model_flow.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.engine import DecodeParams, FinishedEvent, RoundEvent
from app.engine.stats import (
    alpha_estimate,
    answer_speedup,
    cost_ratios,
    per_position_acceptance,
    speedup_series,
)


@dataclass
class RoundLog:
    rounds: list[RoundEvent] = field(default_factory=list)

    def histogram(self, gamma: int) -> tuple[list[int], list[int]]:
        """(rounds by accepted count 0..gamma, of which ended with a bonus token)."""
        counts, bonus = [0] * (gamma + 1), [0] * (gamma + 1)
        for r in self.rounds:
            if r.drafted:
                counts[min(r.accepted, gamma)] += 1
                bonus[min(r.accepted, gamma)] += r.bonus
        return counts, bonus

    @property
    def alpha(self) -> float | None:
        return alpha_estimate(self.rounds)

    def per_position(self, gamma: int) -> list[float | None]:
        return per_position_acceptance(self.rounds, gamma)

    @property
    def tokens(self) -> int:
        return sum(r.emitted for r in self.rounds)

    @property
    def seconds(self) -> float:
        return sum(r.draft_time + r.verify_time for r in self.rounds)


@dataclass
class LiveStats:
    message: RoundLog = field(default_factory=RoundLog)
    session: RoundLog = field(default_factory=RoundLog)
    baseline_step: float | None = None  # target-only seconds per token, measured
    version: int = 0  # bumped on every change, so the plot timer redraws only when needed
    notice: str | None = None  # said on the speedup plot: target-only by choice, or a predicted slowdown

    def new_message(self) -> None:
        self.message = RoundLog()
        self.version += 1

    def reset(self) -> None:
        self.message, self.session = RoundLog(), RoundLog()
        self.version += 1

    def add(self, rounds: list[RoundEvent]) -> None:
        self.message.rounds.extend(rounds)
        self.session.rounds.extend(rounds)
        self.version += 1

    def set_notice(self, text: str | None) -> None:
        self.notice = text
        self.version += 1

    def set_baseline(self, seconds_per_token: float) -> None:
        self.baseline_step = seconds_per_token
        self.version += 1

    @property
    def max_gamma(self) -> int:
        return max((r.gamma for r in self.session.rounds), default=1) or 1

    def speedup_series(self) -> tuple[list[int], list[float]]:
        """Measured speedup of the current message after each round: x = tokens so far."""
        return speedup_series(self.message.rounds, self.baseline_step)

    def cost_ratios(self) -> tuple[float, float] | None:
        """(c, verification cost) in target steps, from this answer's timings."""
        return cost_ratios(self.message.rounds, self.baseline_step)

    def predicted(self) -> float | None:
        """This answer so far: Leviathan et al.'s speedup on its own α, γ, c, verification cost and share of
        rounds that proposed (app.engine.stats.answer_speedup)."""
        return answer_speedup(self.message.rounds, self.message.alpha, self.baseline_step)

    def throughput_series(self) -> tuple[list[int], list[float]]:
        """Tokens per second of the current message after each round but the prefill one: x = tokens so far."""
        xs, ys, tokens, seconds = [], [], 0, 0.0
        for r in self.message.rounds[1:]:
            tokens += r.emitted
            seconds += r.draft_time + r.verify_time
            if seconds > 0:
                xs.append(tokens)
                ys.append(tokens / seconds)
        return xs, ys

    def tokens_per_second(self) -> float | None:
        rounds = self.message.rounds[1:] or self.message.rounds
        seconds = sum(r.draft_time + r.verify_time for r in rounds)
        return sum(r.emitted for r in rounds) / seconds if seconds else None

    def message_record(self, fin: FinishedEvent | None, new_tokens: int, params: DecodeParams) -> dict:
        """The current message's stats as stored with it (JSON); fin is None when decoding failed."""
        log = self.message
        gamma = max((r.gamma for r in log.rounds), default=params.gamma)
        _, speedup = self.speedup_series()
        return {
            "new_tokens": new_tokens,
            "seconds": fin.elapsed if fin else log.seconds,
            "tokens_per_second": self.tokens_per_second(),
            "alpha": log.alpha,
            "gamma": gamma,
            "histogram": log.histogram(gamma)[0],
            "rounds": [[r.drafted, r.accepted, r.emitted, int(r.bonus)] for r in log.rounds],
            # what the plots need to redraw a reopened chat; the exports ignore it
            "round_timing": [[r.gamma, r.draft_time, r.verify_time, list(r.overlap)] for r in log.rounds],
            "baseline_step": self.baseline_step,
            "speedup": speedup[-1] if speedup else None,
            "predicted_speedup": self.predicted(),
            "finish_reason": fin.reason if fin else "error",
            "temperature": params.temperature, "top_k": params.top_k, "top_p": params.top_p, "seed": params.seed,
        }


def rounds_from_stats(stats: dict) -> list[RoundEvent]:
    """RoundEvents rebuilt from a stored message's stats, for the plots of a reopened chat."""
    rounds = stats.get("rounds") or []
    timing = stats.get("round_timing") or [[stats.get("gamma") or 1, 0.0, 0.0, []]] * len(rounds)
    return [
        RoundEvent(round=i, gamma=gamma, drafted=drafted, accepted=accepted, emitted=emitted, bonus=bool(bonus),
                   overlap=tuple(overlap), draft_time=draft_time, verify_time=verify_time)
        for i, ((drafted, accepted, emitted, bonus), (gamma, draft_time, verify_time, overlap))
        in enumerate(zip(rounds, timing, strict=True))
    ]
