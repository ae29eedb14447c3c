"""v(n) as the decoding loop pays it, learned from live rounds of one-row and multi-row passes.

The load-time v(n) times bare passes at the probe's context (335 tokens). A pass's extra rows are
arithmetic whose time does not shrink with the context, while a one-row step does: on the native path a
2-row pass measured 1.00-1.13 steps at load and 1.22-1.25 in chats of 50-150 tokens (docs/choosing.md).
A controller whose rounds mix target steps and proposals (prompt lookup decided per round) sees both
kinds, so it can price the extra rows as this conversation pays them: e extra steps per extra row on top
of the calibrated v(n), an exponential moving average over multi-row rounds against the live one-row
round. Pure arithmetic: no torch.
"""

from __future__ import annotations

from itertools import accumulate

from .cost import VerifyCosts


class LiveVerify:
    """The calibrated VerifyCosts at the chat's own context, each pass of n rows shifted by e (n - 1) live
    target steps (`costs`, `at`)."""

    def __init__(self, calibrated: VerifyCosts, weight: float) -> None:
        self.calibrated, self.weight = calibrated, weight
        self.step: float | None = None  # seconds of a live one-row round
        self.extra = 0.0  # e: live cost of an extra row beyond the calibrated v(n), in target steps
        self.context = calibrated.context  # tokens cached before the latest round
        self.costs = calibrated

    def at(self, context: int) -> VerifyCosts:
        """The costs of a pass after `context` tokens: the calibrated curve there, shifted by the live e."""
        return shifted(self.calibrated.at(context), self.extra) if self.step is not None else self.calibrated.at(context)

    def observe(self, rows: int, seconds: float, context: int | None = None) -> None:
        """A round's verify pass over `rows` tokens after `context` tokens took `seconds` (the prefill round is the
        caller's to skip)."""
        if context is not None:
            self.context = context
        if seconds <= 0 or rows < 1:
            return
        w = self.weight
        if rows == 1:
            self.step = seconds if self.step is None else self.step + w * (seconds - self.step)
            return
        if self.step is None:
            return  # no live step yet to measure a pass against
        e = (seconds / self.step - self.calibrated.at(self.context).v(rows)) / (rows - 1)
        self.extra += w * (e - self.extra)
        self.costs = self.at(self.context)


def shifted(costs: VerifyCosts, extra: float) -> VerifyCosts:
    """costs with each pass of n tokens dearer by extra (n - 1) target steps (cheaper where extra < 0), never
    below one step nor below the pass one token shorter: a row never pays back."""
    step = costs.step

    def shift(seconds: tuple[float, ...]) -> tuple[float, ...]:  # a running maximum, from one step up
        return tuple(accumulate((s + extra * i * step for i, s in enumerate(seconds)), max, initial=step))[1:]

    return VerifyCosts(shift(costs.seconds), costs.head, shift(costs.tree_seconds))
