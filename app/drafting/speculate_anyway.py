"""The drafter a teaching view runs when auto chose target-only: the fastest one measured, built on
the same measurements, so the speedup it states (below 1 on such a machine) is the one auto predicted."""

from __future__ import annotations

from app.drafting.auto import Selection
from app.drafting.drafts import make_drafter
from app.drafting.reasons import limit_text
from app.engine.policy import Choice, Option
from app.models.loading import LoadedModel


def best_option(selection: Selection | None) -> Option | None:
    """The fastest measured drafter of a target-only choice (its predicted speedup is its cost); None
    when the selection speculates already or nothing was measured."""
    if selection is None or not selection.choice.target_only or not selection.choice.options:
        return None
    return selection.choice.options[0]


def speculate_anyway(selection: Selection, target: LoadedModel, **load_kwargs) -> Selection:
    """The selection with auto's best measured drafter in place of target-only (no timing again).
    A selection that already speculates is returned as it is; ValueError when nothing was measured."""
    if not selection.choice.target_only:
        return selection
    best = best_option(selection)
    if best is None:
        raise ValueError("no drafter is available for this target, so there is no speculation to show")
    drafter = make_drafter(best.name, target, **load_kwargs)
    reason = (f"{best.label}, γ {best.gamma}, shown anyway: predicted {best.predicted:.2f}× target-only on this "
              f"machine ({limit_text(best.limit)})")
    choice = Choice(best.name, best.gamma, best.predicted, reason, selection.choice.options)
    return Selection(drafter, best.name, choice, selection.calibration)
