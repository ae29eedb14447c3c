"""Auto's fastest measured drafter, for the views that must show speculation where auto runs target-only."""

from __future__ import annotations

import pytest

from app.drafting.auto import Calibration, Selection, calibrate
from app.drafting.speculate_anyway import best_option, speculate_anyway
from app.engine.policy import choose
from app.models import load_model


@pytest.fixture
def target_only(tiny_pair_dirs):
    """A real measurement of the tiny target's drafters, chosen with a margin none can meet."""
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    cal, _ = calibrate(target, ["self", "prompt-lookup"], use_cache=False)
    choice = choose(cal.profiles, cal.verify, margin=1e9)
    assert choice.target_only and len(choice.options) == 2
    return target, Selection(None, "none", choice, cal)


def test_the_fastest_measured_drafter_runs_with_its_predicted_cost(target_only):
    target, selection = target_only
    best = selection.choice.options[0]
    anyway = speculate_anyway(selection, target)
    assert anyway.drafter is not None and anyway.spec == best.name == best_option(selection).name
    assert anyway.choice.predicted == best.predicted  # one number: the calibration's prediction
    assert "shown anyway" in anyway.choice.reason and anyway.calibration is selection.calibration
    assert anyway.auto_gamma() is not None
    assert best_option(anyway) is None  # already speculating: nothing more to offer
    assert speculate_anyway(anyway, target) is anyway


def test_nothing_measured_is_a_clear_error(target_only):
    target, selection = target_only
    empty = Selection(None, "none", choose((), selection.calibration.verify), Calibration(
        selection.calibration.verify, (), True, 0.0, "CPU"))
    assert best_option(empty) is None
    with pytest.raises(ValueError, match="no drafter is available"):
        speculate_anyway(empty, target)
