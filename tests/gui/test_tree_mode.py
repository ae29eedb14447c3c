"""Models ▸ Token trees: the mode the chat model holds reaches the drafter selection, the status bar says
the tree, answers run tree rounds, and the choice is remembered."""

from __future__ import annotations

from gui_helpers import send


def test_token_trees_menu_switches_the_round_kind_and_is_remembered(qtbot, window):
    actions = {a.data(): a for a in window.tree_actions.actions()}
    assert set(actions) == {"auto", "on", "off"} and actions["off"].isChecked()  # the fixture's chains
    assert not hasattr(window.model.drafter, "draft_tree")
    actions["on"].trigger()
    qtbot.waitUntil(lambda: window.model.idle and hasattr(window.model.drafter, "draft_tree"), timeout=120_000)
    assert window.model.tree_mode == "on" and window.model.selection.choice.tree
    assert "tree of" in window.status.labels["choice"].toolTip()
    assert window.settings.tree == "on"
    window.recorder.reset()
    send(qtbot, window, "hi")
    assert any(r.tree_tokens for r in window.recorder.rounds)
    actions["off"].trigger()
    qtbot.waitUntil(lambda: window.model.idle and not hasattr(window.model.drafter, "draft_tree"), timeout=120_000)
    assert not window.model.selection.choice.tree and window.settings.tree == "off"


def test_the_menu_follows_the_chat_models_tree_mode(qtbot, window):
    """The mode changed on the chat model, not through the menu: the menu shows it and the pair is chosen
    again with it (both follow tree_mode_changed)."""
    actions = {a.data(): a for a in window.tree_actions.actions()}
    window.model.set_tree_mode("on")
    assert actions["on"].isChecked() and not actions["off"].isChecked()
    qtbot.waitUntil(lambda: window.model.idle and hasattr(window.model.drafter, "draft_tree"), timeout=120_000)
    assert window.settings.tree == "on"
