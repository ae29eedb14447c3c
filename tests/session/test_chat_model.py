"""The chat model without Qt: one state with waiting work, observers, the live switch to target-only, the
γ range, and the token-tree mode reaching the drafter selection (tiny models, real calibration)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.drafting.reasons import switch_text
from app.engine.policy import AUTO_GAMMA_MAX, AutoGamma, DrafterProfile, VerifyCosts
from app.session import ChatModel, State

CPU = VerifyCosts((0.050, 0.055, 0.0585, 0.063, 0.0665, 0.072, 0.078, 0.083, 0.089))


def test_importing_the_session_loads_neither_qt_nor_torch():
    code = "import sys, app.session, app.session.loading; print(sorted(m for m in ('PySide6', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_one_state_at_a_time_and_observers_hear_each_change():
    model = ChatModel()
    seen = []
    model.state_changed.connect(seen.append)
    assert model.idle and model.begin(State.GENERATING) and model.generating
    assert not model.begin(State.LOADING) and model.generating  # busy: refused, nothing changed
    model.end(State.LOADING)  # not the running state: nothing happens
    assert model.generating
    model.end(State.GENERATING)
    assert model.idle and seen == [State.GENERATING, State.IDLE]
    assert model.begin(State.SERVING) and model.generating and not model.loading  # serving counts as generating


def test_work_asked_for_while_busy_waits_and_starts_in_order():
    model = ChatModel()
    started = []
    model.begin(State.GENERATING)
    assert not model.when_idle(State.LOADING, lambda: started.append(("load", model.state)))
    assert not model.when_idle(State.TRAINING, lambda: started.append(("train", model.state)))
    assert started == [] and model.waiting == 2
    model.end(State.GENERATING)  # a draft chosen while answering loads now, for the next message
    assert started == [("load", State.LOADING)] and model.loading
    model.end(State.LOADING)
    assert started[-1] == ("train", State.TRAINING) and model.training and model.waiting == 0
    assert model.when_idle(State.RACING, lambda: None) is False  # still training: waits
    model.close()
    assert model.state is State.CLOSING and model.closing.is_set() and model.waiting == 0
    assert not model.when_idle(State.LOADING, lambda: started.append("never"))
    assert "never" not in started


def test_closing_starts_nothing_that_waited():
    model = ChatModel()
    started = []
    model.begin(State.GENERATING)
    model.when_idle(State.LOADING, lambda: started.append("load"))
    model.closing.set()  # the window sets it first, then delivers the answer's last events
    model.end(State.GENERATING)
    assert started == [] and model.idle


@pytest.fixture(scope="module")
def tiny_target(tiny_pair_dirs):
    from app.models import load_model

    return load_model(str(tiny_pair_dirs[0]))


def _round(i, gamma, accepted, overlap, draft_time, verify_time):
    from app.engine import RoundEvent

    return RoundEvent(round=i, gamma=gamma, drafted=gamma, accepted=accepted, emitted=accepted + 1,
                      bonus=accepted == gamma, overlap=tuple(overlap), draft_time=draft_time, verify_time=verify_time)


def _auto_pair(tiny_target):
    from app.engine.drafters import PromptLookupDrafter

    model = ChatModel()
    changes = []
    model.pair_changed.connect(lambda: changes.append((model.drafter, model.auto)))
    auto = AutoGamma(DrafterProfile("prompt-lookup", "prompt lookup", 0.05, 0.9), CPU)
    assert model.install(tiny_target, PromptLookupDrafter(), "auto", auto=auto)  # a new target
    assert not model.install(tiny_target, PromptLookupDrafter(), "auto", auto=auto)  # a draft swap: same target
    return model, auto, changes


def test_a_slow_measured_answer_switches_auto_to_target_only(tiny_target):
    model, _, changes = _auto_pair(tiny_target)
    assert model.recheck(0.5, 10) is None and model.drafter is not None  # too short to judge: mostly prefill
    assert model.recheck(0.95, 40) is None and model.drafter is not None  # within the noise band
    switch = model.recheck(0.5, 40)
    assert switch.kind == "measured" and switch.speedup == 0.5 and "0.50× target-only" in switch_text(switch)
    assert model.drafter is None and model.auto is None and model.switched is switch
    assert changes[-1] == (None, None)  # observers heard it


def test_live_rounds_predicting_a_slowdown_switch_auto_to_target_only(tiny_target):
    model, auto, _ = _auto_pair(tiny_target)
    for i in range(1, 30):  # nothing accepted and a costly draft: predicted slower than target-only
        g = auto.gamma()
        auto.observe(_round(i, g, 0, [0.02] * g, 0.05 * g, CPU.seconds[g]))
    switch = model.recheck(None, 0)
    assert switch.kind == "predicted" and switch.speedup < 1.0 and model.drafter is None


def test_a_hand_picked_draft_is_never_switched(tiny_target):
    model, _, _ = _auto_pair(tiny_target)
    model.draft_spec = "prompt-lookup"
    assert model.recheck(0.1, 100) is None and model.drafter is not None


def test_gamma_max_is_the_live_range_on_auto_and_the_hand_value_otherwise(tiny_target):
    model, auto, _ = _auto_pair(tiny_target)
    assert model.gamma_max(None) == auto.gamma_max == AUTO_GAMMA_MAX and model.gamma_max(3) == 3
    assert ChatModel().gamma_max(None) == 4  # no controller yet: the start value


@pytest.mark.parametrize("mode", ["on", "off"])
def test_the_tree_mode_reaches_the_selection(tiny_pair_dirs, tiny_target, mode, monkeypatch, tmp_path):
    from app.session.loading import LoadRequest, load_pair

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path))
    model = ChatModel(tree_mode=mode)
    stages = []
    result = load_pair(LoadRequest(str(tiny_pair_dirs[0]), str(tiny_pair_dirs[1]), current=tiny_target,
                                   tree=model.tree), lambda f: None, lambda what, p: stages.append(what))
    assert result.target is tiny_target and "Draft" in stages  # the target was reused, the draft timed
    choice = result.selection.choice
    assert choice.tree is (mode == "on")
    assert hasattr(result.drafter, "draft_tree") is (mode == "on")
    with pytest.raises(ValueError):
        model.set_tree_mode("sometimes")
