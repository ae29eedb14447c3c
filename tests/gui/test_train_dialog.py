"""Models → Train a draft…: distill runs in the engine thread with progress and cancel; the result is
listed in the draft picker with its α and c, and one click uses it. The training flow with its
collaborators (the model flow's, which loads the trained draft)."""

from __future__ import annotations

import pytest

pytest.importorskip("app.distill")


@pytest.fixture
def trainer(model_rig):
    """The model rig with a training flow, handed what MainWindow hands it."""
    from app.gui.training_flow import TrainingFlow

    rig = model_rig
    rig.training_flow = TrainingFlow(rig.model, rig.distill_worker, rig.status, rig.controls,
                                     rig.model_flow.load_models)
    rig.own(rig.training_flow)
    return rig


def _tiny_config(target, out):
    """Fixed data volume and step count, so the run takes seconds whatever the machine's load."""
    from app.distill import DistillConfig

    return DistillConfig(target=target, out=str(out), minutes=30, vocab_k=24, max_new_tokens=16, gen_batch=96,
                         max_data_tokens=1500, max_steps=12, eval_prompts=3, eval_tokens=8, batch_tokens=1024)


def test_train_list_and_use_a_draft(qtbot, trainer, data_dir, monkeypatch):
    dialog = trainer.training_flow.show_dialog()
    qtbot.addWidget(dialog)
    out = data_dir / "drafts" / "tiny"  # the user's drafts folder: where the picker looks
    monkeypatch.setattr(dialog, "config", lambda: _tiny_config(trainer.model.target.spec, out))
    phases = []
    trainer.distill_worker.progress.connect(lambda p: phases.append(p.phase))
    dialog.start_button.click()
    assert dialog.running and not trainer.send_button.isEnabled()
    qtbot.waitUntil(lambda: not dialog.running, timeout=180_000)
    assert {"data", "train", "eval"} <= set(phases)
    assert "α" in dialog.outcome.text() and str(out) in dialog.outcome.text()
    assert dialog.bar.value() == 1000 and dialog.use_button.isEnabled()
    assert trainer.send_button.isEnabled() and not trainer.model.training
    picker = trainer.controls.draft
    listed = [picker.itemText(i) for i in range(picker.count()) if picker.itemData(i) == str(out)]
    assert len(listed) == 1 and "α" in listed[0] and "c " in listed[0]
    dialog.use_button.click()
    qtbot.waitUntil(lambda: not trainer.model.loading and trainer.model.draft_spec == str(out), timeout=120_000)
    assert "trained feature draft" in trainer.model.drafter.name


def test_cancel_stops_training_and_keeps_the_app_usable(qtbot, trainer, data_dir, monkeypatch):
    dialog = trainer.training_flow.show_dialog()
    qtbot.addWidget(dialog)
    monkeypatch.setattr(dialog, "config", lambda: _tiny_config(trainer.model.target.spec, data_dir / "drafts" / "c"))
    trainer.distill_worker.progress.connect(lambda p: p.phase == "data" and dialog.cancel.set())
    dialog.start_button.click()
    qtbot.waitUntil(lambda: not dialog.running, timeout=180_000)
    assert dialog.phase.text() in ("Finished", "Failed")
    assert trainer.send_button.isEnabled() and not trainer.model.training


def test_training_needs_a_target(qtbot, trainer):
    trainer.model.target = None
    assert trainer.training_flow.show_dialog() is None
