"""Models → Recommended pairs…: sizes and memory shown, one click loads the pair (offline here: a tiny
same-tokenizer target saved as a folder stands in for the hub model), offline says so plainly. The model
flow with its collaborators."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtWidgets import QMessageBox

from app.drafting.recommended import PAIRS, RecommendedPair


@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    import huggingface_hub.constants as hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))


def test_the_real_pairs_show_size_memory_and_offline_state(qtbot, model_rig, empty_hub):
    dialog = model_rig.model_flow.show_recommended_pairs()
    qtbot.addWidget(dialog)
    table = dialog.table
    assert [table.item(r, 0).text() for r in range(table.rowCount())] == [p.name for p in PAIRS]
    assert table.item(0, 1).text() == "362 M" and table.item(1, 2).text() == "3.2 GiB"
    # fp32 on a CPU: 1.7B target + 135M draft, weights plus overhead
    memory = PAIRS[1].memory_bytes(torch.device("cpu")) / 2**30
    assert table.item(1, 3).text() == f"{memory:.1f} GiB" and 8 < memory < 10
    assert table.item(0, 4).text().startswith("offline")
    assert not dialog.buttons[0].isEnabled() and "HF_HUB_OFFLINE" in dialog.buttons[0].toolTip()


def test_one_click_loads_a_same_tokenizer_pair(qtbot, model_rig, tiny_pair_dirs, empty_hub):
    target, draft = map(str, tiny_pair_dirs)
    pair = RecommendedPair(target, "tiny target", 50_000, 1_000_000, draft=draft)
    dialog = model_rig.model_flow.show_recommended_pairs([pair])
    qtbot.addWidget(dialog)
    assert dialog.table.item(0, 4).text() == "downloaded" and dialog.buttons[0].text() == "Use"
    model_rig.model.target = None  # as on a fresh start: the pair must really be loaded again
    dialog.buttons[0].click()
    qtbot.waitUntil(lambda: not model_rig.model.loading and model_rig.model.target is not None, timeout=60_000)
    assert model_rig.model.target.spec == target and model_rig.model.draft_spec == draft and model_rig.model.drafter is not None
    assert not dialog.isVisible()


def test_an_uncached_hub_target_offline_gets_a_clear_message(qtbot, model_rig, empty_hub, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "open", lambda self: shown.append(self.text()))
    model_rig.model_flow.load_models("HuggingFaceTB/SmolLM2-1.7B-Instruct", "default")
    qtbot.waitUntil(lambda: not model_rig.model.loading, timeout=60_000)
    assert shown and "not in the local Hugging Face cache" in shown[0] and "offline" in shown[0]
    assert "Traceback" not in shown[0]
