"""The status sink follows the chat model: its labels change with the pair (pair_changed) without a flow
asking, and say what ran after new rounds."""

from __future__ import annotations


def test_the_status_follows_the_pair_and_the_rounds(qtbot, parts, tiny_pair_dirs):
    labels = parts.status.labels
    assert labels["models"].text() == "" and labels["speed"].text() == ""
    parts.install(*tiny_pair_dirs)  # ChatModel.install: pair_changed
    target, drafter = parts.model.target, parts.model.drafter
    assert labels["models"].text() == f"{target.name} ← {drafter.name}"
    assert labels["device"].text().startswith("CPU · ") and labels["speed"].text() == "– tok/s"
    parts.model.drafter = None  # as auto's live switch leaves it, announced by the model
    parts.model.pair_changed.emit()
    assert labels["models"].text() == f"{target.name} ← none (target only)"
    parts.status.show_banner("a note", info=True)
    assert parts.status.banner.objectName() == "info" and parts.status.banner.text() == "a note"
