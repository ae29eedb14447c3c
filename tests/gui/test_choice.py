"""The measured drafter choice: target-only said plainly, auto γ fed live, hand-set γ wins. The model flow
with its collaborators (the status, the plots, the chat flow that answers)."""

from __future__ import annotations

from gui_helpers import CPU, send


def test_nothing_faster_runs_target_only_and_says_why(qtbot, auto_rig):
    win = auto_rig({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    assert win.model.drafter is None and win.model.selection.choice.target_only
    status = win.status.labels["choice"].text()
    assert status.startswith("Target-only") and "draft costs 1.05 target steps on this CPU" in status
    win.plots.refresh()
    notice = win.plots.notice.text()
    assert "Running target-only" in notice and "1.05 target steps on this CPU" in notice
    win.controls.max_new.setValue(12)
    send(qtbot, win, "hello")
    assert all(r.drafted == 0 for r in win.recorder.rounds)


def test_auto_gamma_is_fed_live_and_a_hand_set_gamma_wins(qtbot, auto_rig, monkeypatch):
    from app.engine.policy import AUTO_GAMMA_MAX, switch

    monkeypatch.setattr(switch, "RECHECK_ROUNDS", 10**9)  # the live fallbacks are tested on their own below
    monkeypatch.setattr(switch, "MEASURED_FLOOR", 0.0)
    win = auto_rig({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.7)})
    assert win.model.selection.spec == "prompt-lookup" and win.model.drafter is not None
    assert win.controls.gamma_is_auto() and win.model.auto is not None
    assert "γ auto" in win.status.labels["choice"].text()
    assert win.plots.notice.text() == ""
    win.controls.max_new.setValue(40)
    send(qtbot, win, "say it again. say it again. say it")
    assert win.model.auto.rounds == len(win.recorder.rounds) - 1  # every round but the prefill one
    assert all(1 <= r.gamma <= AUTO_GAMMA_MAX for r in win.recorder.rounds)
    win.recorder.reset()
    win.controls.gamma.setValue(3)
    send(qtbot, win, "again")
    rounds = win.recorder.rounds
    assert rounds and all(r.gamma == min(3, r.gamma) for r in rounds) and rounds[0].gamma == 3


def test_a_hand_picked_slow_draft_is_called_slower(qtbot, auto_rig, monkeypatch):
    win = auto_rig({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    win.model_flow.load_models(win.model.target_spec, "self")
    qtbot.waitUntil(lambda: not win.model.loading and win.model.drafter is not None, timeout=60_000)
    assert win.status.labels["choice"].text().startswith("Slower than target-only")
    win.plots.refresh()
    assert "Slower than target-only" in win.plots.notice.text()


def test_auto_falls_back_to_target_only_when_live_rounds_say_so(qtbot, auto_rig):
    from app.engine import RoundEvent

    win = auto_rig({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.7)})
    assert win.model.drafter is not None
    win.model_flow.recheck_choice()
    assert win.model.drafter is not None  # no live evidence yet
    for i in range(1, 30):  # the draft is rejected every time in practice
        g = win.model.auto.gamma()
        win.model.auto.observe(RoundEvent(round=i, gamma=g, drafted=g, accepted=0, emitted=1, bonus=False, overlap=(0.0,) * g,
                                   draft_time=1e-5, verify_time=CPU.seconds[g]))
    win.model_flow.recheck_choice()
    assert win.model.drafter is None and win.model.auto is None
    assert win.status.labels["choice"].text() == "Target-only (switched live)"
    win.plots.refresh()
    assert "Switched to target-only: the live acceptance at draft position 1 (α₁ 0.0" in \
        win.plots.notice.text()


def test_auto_falls_back_when_an_answer_measures_slower(qtbot, auto_rig):
    """The load-time probe can be optimistic for long chats (the bf16 self-draft slows with context faster than
    the target): an answer measured clearly slower than target-only steps timed in this chat ends the draft."""
    from app.session import Message

    win = auto_rig({"self": (0.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    assert win.model.drafter is not None
    win.conversation.messages.append(Message("assistant", "x", stats={"speedup": 0.95, "new_tokens": 40}))
    win.model_flow.recheck_choice()
    assert win.model.drafter is not None  # within the noise band
    win.conversation.messages.append(Message("assistant", "x", stats={"speedup": 0.5, "new_tokens": 8}))
    win.model_flow.recheck_choice()
    assert win.model.drafter is not None  # too short to judge: mostly prefill
    win.conversation.messages.append(Message("assistant", "x", stats={"speedup": 0.5, "new_tokens": 40}))
    win.model_flow.recheck_choice()
    assert win.model.drafter is None and win.model.auto is None
    win.plots.refresh()
    assert "the last answer ran at 0.50× target-only" in win.plots.notice.text()


def test_a_chosen_tree_says_its_size_and_yield_in_the_status():
    """Issue #27: a sized tree reads 'tree 16 · 2.3 tokens a round', from the live controller's E[tokens]."""
    from types import SimpleNamespace

    from app.engine.policy import TREE_DEPTH, Choice, DrafterProfile, Limit, Option, TreeSize, VerifyCosts
    from app.gui.choice_text import choice_status

    verify = VerifyCosts(tuple(1.0 + 0.02 * n for n in range(33)))
    profile = DrafterProfile("trained", "trained draft", 0.05, 0.6, tree_accepted=(0.5,) * 15 + (1.3,), tree_c=0.1)
    option = Option("trained", "trained draft", TREE_DEPTH, 1.6, Limit("acceptance", 0.6, 1.3, "CPU"), nodes=16)
    choice = Choice("trained", TREE_DEPTH, 1.6, options=(option,), nodes=16)
    selection = SimpleNamespace(choice=choice, calibration=SimpleNamespace(cached=False, device="CPU"))
    text, why = choice_status(selection, TreeSize(profile, verify, 16), True, None)
    assert text.startswith("tree 16 · 2.3 tokens a round") and "tree of 16 nodes" in why
    chain = Choice("trained", 4, 1.6, options=(Option("trained", "trained draft", 4, 1.6, option.limit),))
    text, _ = choice_status(SimpleNamespace(choice=chain, calibration=selection.calibration), None, False, None)
    assert "tokens a round" not in text
