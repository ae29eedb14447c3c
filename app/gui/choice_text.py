"""The drafter choice in the user's language: the status bar's text and tooltip, the speedup plot's notice and
why auto switched to target-only (app.drafting.reasons has the English for the CLI and the server)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication


def plot_notice(selection) -> str | None:
    """What the speedup plot must say about the loaded choice: running target-only, or a hand-picked
    draft predicted slower than target-only. None when the draft is predicted to pay."""
    if selection is None:
        return None
    choice = selection.choice
    if choice.target_only and choice.options:
        return QCoreApplication.translate("ModelFlow", "Running target-only: no draft is predicted to be faster here. {0}").format(_options(choice))
    if not choice.target_only and choice.predicted < 1.0:
        best = choice.options[0] if choice.options else None
        return QCoreApplication.translate("ModelFlow", "Slower than target-only: {0} is predicted at {1:.2f}×, because {2}. Choose draft 'auto'.").format(
            best.label, choice.predicted, _why(best.limit)) if best else None
    return None


def switch_text(switch) -> str:
    """app.engine.policy.Switch (why auto went target-only live) in the user's language (app.drafting.reasons has the English)."""
    if switch.kind == "measured":
        return QCoreApplication.translate(
            "ModelFlow", "Switched to target-only: the last answer ran at {0:.2f}× target-only with {1} "
            "(against target-only steps timed in this chat).").format(switch.speedup, switch.label)
    return QCoreApplication.translate("ModelFlow", "Switched to target-only: the live acceptance at draft position 1 (α₁ {0:.2f}) and "
                                      "draft cost (c {1:.2f}) predict {2} at {3:.2f}× target-only on this machine.").format(
        switch.alpha1, switch.c, switch.label, switch.speedup)


def choice_status(selection, auto, gamma_auto: bool, stats, switched: str | None = None) -> tuple[str, str]:
    """(status-bar text, tooltip) for the drafter choice and the live γ."""
    if switched:
        return QCoreApplication.translate("ModelFlow", "Target-only (switched live)"), switched
    if selection is None:
        return "", ""
    choice = selection.choice
    how = QCoreApplication.translate("ModelFlow", "cached timings") if selection.calibration.cached else QCoreApplication.translate("ModelFlow", "timed at load")
    reason = _reason(choice, selection.calibration.device)
    if choice.target_only:
        if not choice.options:
            return QCoreApplication.translate("ModelFlow", "target-only"), reason
        return QCoreApplication.translate("ModelFlow", "Target-only: {0}").format(_options(choice)), f"{reason} [{how}]"
    predicted = auto.predicted if auto is not None and auto.rounds else choice.predicted
    if choice.tree and auto is not None:  # a sized tree: its budget and what it yields, live
        return QCoreApplication.translate("ModelFlow", "tree {0} · {1:.1f} tokens a round · auto's plan {2:.2f}×").format(
            choice.nodes, auto.tokens_per_round, predicted), f"{reason} [{how}]"
    gamma = QCoreApplication.translate("ModelFlow", "γ auto {0}").format(auto.gamma()) if auto is not None and gamma_auto else QCoreApplication.translate("ModelFlow", "γ fixed")
    if predicted < 1.0:
        return QCoreApplication.translate("ModelFlow", "Slower than target-only: auto's plan {0:.2f}× · {1}").format(predicted, gamma), \
            f"{reason} [{how}]"
    return QCoreApplication.translate("ModelFlow", "{0} · auto's plan {1:.2f}×").format(gamma, predicted), f"{reason} [{how}]"


def _options(choice) -> str:
    return "; ".join(f"{o.label} {o.predicted:.2f}× ({_why(o.limit)})" for o in choice.options)


def _why(limit) -> str:
    """app.engine.policy.Limit in the user's language (app.drafting.reasons has the English)."""
    if limit.kind == "cost":
        return QCoreApplication.translate("Policy", "draft costs {0:.2f} target steps on this {1}").format(
            limit.value, limit.device)
    if limit.kind == "coverage":
        return QCoreApplication.translate("Policy", "it proposes in only {0:.0%} of rounds here").format(limit.value)
    if limit.kind == "tree":
        return QCoreApplication.translate("Policy", "a tree does not pay here: its best, {0} nodes, accepts {1:.2f} "
                                                    "tokens a round for a verify cost of {2:.2f} target steps").format(
            limit.nodes, limit.value, limit.verify)
    return QCoreApplication.translate("Policy", "acceptance α {0:.2f} is too low for a verify cost of {1:.2f} target "
                                                "steps").format(limit.value, limit.verify)


def _reason(choice, device: str) -> str:
    """app.drafting.reasons.choice_reason in the user's language."""
    if not choice.options:
        return QCoreApplication.translate("Policy", "target-only: no drafter available")
    if choice.target_only:
        return QCoreApplication.translate("Policy", "target-only: no draft is predicted to be faster on this {0} "
                                                    "({1})").format(device, _options(choice))
    best = choice.options[0]
    if best.nodes:
        return QCoreApplication.translate("Policy", "{0}, tree of {1} nodes: predicted {2:.2f}× target-only").format(
            best.label, best.nodes, best.predicted)
    text = QCoreApplication.translate("Policy", "{0}, γ {1}: predicted {2:.2f}× target-only").format(
        best.label, best.gamma, best.predicted)
    return f"{text} ({_why(best.tree)})" if best.tree is not None else text
