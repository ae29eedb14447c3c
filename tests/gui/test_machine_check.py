"""The window runs the machine-profile check the CLI runs (app.machine.live_check, through the answer's loop):
after an answer whose rounds disagree with the profile the pair was chosen by, the profile is disputed and the
window says so; Models ▸ Measure this machine again loads the pair with every timing taken anew."""

from __future__ import annotations

from dataclasses import replace

from gui_helpers import send

from app.machine.live_check import LiveCheck


def planted(profile, factor: float):
    """The profile with its step and passes `factor` times what was timed here (as if timed on another machine)."""
    v = profile.verify
    costs = replace(v.costs, seconds=tuple(s * factor for s in v.costs.seconds), round=v.costs.round * factor,
                    tree_seconds=tuple(s * factor for s in v.costs.tree_seconds))
    return replace(profile, verify=replace(v, costs=costs, loop_step=(v.loop_step or v.costs.step) * factor, load=None))


def test_an_answer_that_disagrees_with_the_profile_disputes_it_and_says_so(qtbot, model_rig, tmp_path, monkeypatch):
    rig = model_rig
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path))  # the dispute is written here, not to the suite's cache
    profile = rig.model.target.profile
    rig.controls.max_new.setValue(24)
    wrong = planted(profile, 0.05)  # says steps take a twentieth of what they take on this machine
    rig.model.live = LiveCheck(wrong, rounds=4, tolerance=1e9)  # the twin: a check that lets any round pass
    send(qtbot, rig, "abcabc")
    assert not rig.status.banner.isVisible() and not rig.model.target.profile.disputed
    rig.model.live = LiveCheck(wrong, rounds=4)
    send(qtbot, rig, "abcabc")
    assert rig.status.banner.isVisible() and "Live rounds ran" in rig.status.banner.text()
    assert "slower than this machine's profile" in rig.status.banner.text()
    assert rig.model.target.profile.disputed  # the next load measures it all again
    rig.status.hide_banner()
    send(qtbot, rig, "abcabc")
    assert not rig.status.banner.isVisible()  # one verdict per loaded profile


def test_measure_this_machine_again_times_the_pair_anew(qtbot, model_rig):
    rig = model_rig
    first = rig.model.target
    rig.model_flow.reload()  # the twin: a plain reload keeps the cached timings
    qtbot.waitUntil(lambda: rig.model.idle and rig.model.selection is not None, timeout=120_000)
    assert rig.model.selection.calibration.cached
    rig.model_flow.measure_again()
    qtbot.waitUntil(lambda: rig.model.idle and rig.model.target is not first, timeout=120_000)
    assert not rig.model.selection.calibration.cached  # the step and the drafter were timed again
