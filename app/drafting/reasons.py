"""The policy's data in English words, for the CLI, the logs and the server: one source for each sentence.

The engine returns its choice, limits and switches as data (app.engine.policy); the window words the
same data in the user's language (app/gui/model_flow.py).
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.policy import Choice, Limit, Option, Switch


def describe(option: Option) -> str:
    """The chosen form in one phrase: "trained draft, γ 4" or "trained draft, tree of 12 nodes"."""
    form = f"tree of {option.nodes} nodes" if option.nodes else f"γ {option.gamma}"
    return f"{option.label}, {form}"


def limit_text(limit: Limit) -> str:
    """What limits a drafter, e.g. "draft costs 1.05 target steps on this CPU"."""
    if limit.kind == "tree":
        return (f"a tree does not pay here: its best, {limit.nodes} nodes, accepts {limit.value:.2f} tokens a round "
                f"for a verify cost of {limit.verify:.2f} target steps")
    if limit.kind == "cost":
        return f"draft costs {limit.value:.2f} target steps on this {limit.device}"
    if limit.kind == "coverage":
        return f"it proposes in only {limit.value:.0%} of rounds here"
    return f"acceptance α {limit.value:.2f} is too low for a verify cost of {limit.verify:.2f} target steps"


def choice_reason(choice: Choice) -> str:
    """One line for the status bar and the CLI: what policy.choose chose and why."""
    if not choice.target_only:
        best = choice.options[0]
        reason = f"{describe(best)}: predicted {best.predicted:.2f}× target-only"
        return reason + (f" ({limit_text(best.tree)})" if best.tree is not None else "")
    if not choice.options:
        return "target-only: no drafter available"
    why = "; ".join(f"{o.label} {o.predicted:.2f}×: {limit_text(o.limit)}" for o in choice.options)
    return f"target-only: no draft is predicted to be faster on this {choice.device} ({why})"


def worded(choice: Choice) -> Choice:
    """The choice with its reason filled in, when its maker left it empty (policy.choose does)."""
    return choice if choice.reason else replace(choice, reason=choice_reason(choice))


def switch_text(switch: Switch) -> str:
    """Why auto went target-only after live rounds."""
    if switch.kind == "measured":
        return (f"Switched to target-only: the last answer ran at {switch.speedup:.2f}× target-only with "
                f"{switch.label} (against target-only steps timed in this chat).")
    return (f"Switched to target-only: the live acceptance at draft position 1 (α₁ {switch.alpha1:.2f}) and draft "
            f"cost (c {switch.c:.2f}) predict {switch.label} at {switch.speedup:.2f}× target-only on this machine.")
