"""Presentation mode and the race view, on the tiny model pair."""

from __future__ import annotations

from gui_helpers import send
from PySide6.QtCore import Qt

from app.gui.presentation import PRESENTATION_PT
from app.recording import read


def test_presentation_mode_and_leaving_it_restores_the_layout(qtbot, window):
    window.controls.max_new.setValue(30)
    send(qtbot, window, "present")
    # Switching themes re-polishes every widget; a model picker filled after the first polish would
    # otherwise widen its dock at the first theme change, presentation or not.
    window.set_theme(window.theme_name)
    qtbot.wait(100)  # let the layout settle
    before = window.presentation.snapshot()
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_F5)  # works with the menu bar hidden too
    qtbot.waitUntil(window.isFullScreen)
    qtbot.wait(200)  # the full-screen resize lands, as it would before anyone presses Esc
    assert window.chat.font().pointSize() >= 28 and window.legend.font().pointSize() >= PRESENTATION_PT
    assert not window.menuBar().isVisible() and not window.input.isVisible()
    assert not window.docks["conversations"].isVisible() and window.docks["plots"].isVisible()
    shown = {k for k, p in window.plots.plots.items() if p.isVisible()}
    assert shown == {"histogram", "speedup"}
    assert window.colors.text in ("#000000", "#ffffff")  # high contrast
    window.presentation.readout.refresh()
    assert window.presentation.readout.values["tps"].text() != "–" and window.presentation.readout.values["alpha"].text() != "–"
    qtbot.keyClick(window.chat, Qt.Key.Key_F2)  # F2 shows the input row
    assert window.input.isVisible()
    qtbot.keyClick(window.chat, Qt.Key.Key_Escape)  # Esc leaves
    assert not window.presentation.on
    qtbot.waitUntil(lambda: window.presentation.snapshot() == before, timeout=3000)


def test_race_runs_twice_and_replays_side_by_side(qtbot, window, tmp_path):
    window.controls.temperature.setValue(0.0)
    window.controls.max_new.setValue(24)
    assert window.race.start("race me", "target")
    qtbot.waitUntil(lambda: not window.model.racing, timeout=60_000)
    assert window.race.error is None and window.race_view.isVisible() and not window.chat.isVisible()
    view = window.race_view
    assert "side-by-side replay of two measured runs" in view.note.text()
    view.finish()
    first, second = (pane.player.run for pane in view.panes)
    assert first.info["draft"] is None and second.info["draft"]["name"] == window.model.drafter.name
    # greedy: both runs emit the same text; each pane shows its own statuses
    text = [[t.text for t in pane.conversation.messages[0].tokens if t.status != "rejected"] for pane in view.panes]
    assert text[0] == text[1]
    assert {t.status for t in view.panes[0].conversation.messages[0].tokens} == {"target"}
    assert view.result.text().startswith("Speedup ")
    path = tmp_path / "race.speclens"
    window.recordings.save_to(path)  # the race is the last recording
    assert read(path).kind == "race" and len(read(path).runs) == 2
    window.race.close()
    assert window.chat.isVisible() and not view.isVisible()
    # a saved race replays in presentation mode
    window.presentation.set(True, full_screen=False)
    assert window.recordings.play_file(path)
    assert view.isVisible() and not view.controls.isVisible()
    view.finish()
    assert view.result.text().startswith("Speedup ")
    window.race.close()
    window.presentation.set(False)


def test_the_empty_chat_offers_examples_that_send_with_one_click(qtbot, window):
    shown = window.chat.toPlainText()
    assert all(e.prompt in shown for e in window.examples.items)
    lookup = next(i for i, e in enumerate(window.examples.items) if e.draft == "prompt-lookup")
    window.controls.max_new.setValue(16)
    window.chat.example_clicked.emit(lookup)  # the anchor's signal
    qtbot.waitUntil(lambda: len(window.conversation.messages) == 2 and not window.model.generating, timeout=60_000)
    assert window.conversation.messages[0].content == window.examples.items[lookup].prompt
    assert window.model.draft_spec == "prompt-lookup" and window.conversation.messages[1].stats["draft"] == "prompt lookup"
    window.history.new_chat()
    assert window.examples.items[0].prompt in window.chat.toPlainText()


def test_an_example_whose_draft_the_target_cannot_build_is_not_offered(qtbot, window, monkeypatch):
    """On a CPU target already in its cheapest form (the native or the bf16 path: the embedded model's
    default) the self-draft example would only answer with a refusal: it is left out, the others stay."""
    from app.drafting import drafts

    assert any(e.draft == "self" for e in window.examples.items)  # the tiny fp32 target has a bf16 self-draft
    monkeypatch.setattr(drafts, "self_draft_dtype", lambda target: None)
    window.examples.measured(None)  # as after a load
    assert [e.draft for e in window.examples.items] == ["prompt-lookup", "prompt-lookup"]
    shown = window.chat.toPlainText()
    assert "self-draft" not in shown and all(e.prompt in shown for e in window.examples.items)


def test_race_of_chain_against_tree_shows_tokens_and_nodes_per_round(qtbot, window, tmp_path):
    window.controls.temperature.setValue(0.0)
    window.controls.max_new.setValue(24)
    assert window.race.start("abcabcabc", "tree")
    qtbot.waitUntil(lambda: not window.model.racing, timeout=60_000)
    assert window.race.error is None and window.race_view.isVisible()
    view = window.race_view
    view.finish()
    chain, tree = (pane.player.run for pane in view.panes)
    assert chain.info["draft"]["name"] == window.model.drafter.name and tree.info["draft"]["name"].endswith(" tree")
    assert [p.title.text().split(",")[0] for p in view.panes] == ["speculative", "token tree"]
    tree_rounds = [s.round for s in tree.steps][1:]
    assert tree_rounds and all(r.tree_tokens for r in tree_rounds)
    assert not any(s.round.tree_tokens for s in chain.steps)
    # greedy: one text either way; each pane says its tokens and verified tokens per round
    text = [[t.text for t in pane.conversation.messages[0].tokens if t.status != "rejected"] for pane in view.panes]
    assert text[0] == text[1]
    nodes = sum(r.tree_nodes for r in tree_rounds) / len(tree_rounds)
    tokens = sum(r.emitted for r in tree_rounds) / len(tree_rounds)
    assert view.panes[1].shape.text() == f"{tokens:.2f} tokens / round · {1 + nodes:.1f} verified / round"
    assert "verified / round" in view.panes[0].shape.text()
    path = tmp_path / "tree-race.speclens"
    window.recordings.save_to(path)
    window.race.close()
    shown = [p.shape.text() for p in view.panes]
    assert window.recordings.play_file(path)  # the saved race replays, trees and all
    view.finish()
    assert [p.shape.text() for p in view.panes] == shown
    window.race.close()
    # on stage the race takes the whole width: the chat's plots step aside and come back after
    window.presentation.set(True, full_screen=False)
    assert window.recordings.play_file(path) and not window.docks["plots"].isVisible()
    window.race.close()
    assert window.docks["plots"].isVisible()
    window.presentation.set(False)


def test_the_readout_shows_tokens_per_round_and_a_trees_nodes(qtbot, window):
    from app.engine.tree_drafters import ModelTreeDrafter
    from app.gui.presentation import Readout

    readout = Readout(window.stats)
    qtbot.addWidget(readout)
    readout.refresh()
    assert readout.values["per_round"].text() == "–" and readout.captions["per_round"].text() == "tokens / round"
    window.controls.max_new.setValue(12)
    send(qtbot, window, "abcabc")
    readout.refresh()
    rounds = window.stats.message.rounds[1:]
    assert readout.values["per_round"].text() == f"{sum(r.emitted for r in rounds) / len(rounds):.2f}"
    assert readout.captions["per_round"].text() == "tokens / round"  # a chain: no nodes
    window.model.drafter = ModelTreeDrafter(window.model.drafter.model, budget=5, depth=3, name="tiny tree")
    send(qtbot, window, "abcabc")
    readout.refresh()
    trees = [r.tree_nodes for r in window.stats.message.rounds[1:] if r.tree_tokens]
    assert trees and readout.captions["per_round"].text() == f"tokens / round · tree of {sum(trees) / len(trees):.0f} nodes"
