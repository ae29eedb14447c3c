"""Loading a model pair in the engine thread and installing it in the window."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QMessageBox

from app.models import AUTO

from .model_loader import LoadRequest, LoadResult

RECHECK_ROUNDS = 12  # live rounds before the load-time choice is second-guessed
MEASURED_FLOOR = 0.9  # an answer measured this much slower than target-only ends auto's draft at once
MEASURED_TOKENS = 16  # ... when it had at least this many tokens (shorter ones are mostly prefill)


class ModelFlowMixin:
    def show_recommended_pairs(self, pairs=None):
        """Models → Recommended pairs…; a choice loads through the loader (download progress included)."""
        from app.models import default_device

        from .pairs_dialog import PAIRS, PairsDialog

        device = self.target.device if self.target is not None else default_device()
        dialog = PairsDialog(device, pairs or PAIRS, parent=self)
        dialog.chosen.connect(self.load_models)
        dialog.open()
        return dialog

    def show_train_dialog(self):
        """Models → Train a draft…: distill for the loaded target in the engine thread, with cancel."""
        from .distill_dialog import DistillDialog

        if self.target is None:
            self.statusBar().showMessage(QCoreApplication.translate("ModelFlow", "Load a target first"), 3000)
            return None
        if self.training and self.distill_dialog is not None:  # one training at a time: show it
            self.distill_dialog.open()
            return self.distill_dialog
        dialog = DistillDialog(self.target, parent=self)
        dialog.run_requested.connect(self._start_distill)
        worker = self.distill_worker
        # one slot per outcome updates the dialog and the window together: two queued slots could
        # run on either side of a check made in between
        links = ((worker.progress, dialog.on_progress), (worker.done, self._distill_done),
                 (worker.failed, self._distill_failed))
        for signal, slot in getattr(self, "_distill_links", ()):  # the previous dialog stops listening
            signal.disconnect(slot)
        for signal, slot in links:
            signal.connect(slot)
        self._distill_links = links
        dialog.use_draft.connect(lambda path: self.load_models(self.target_spec, path))
        dialog.finished.connect(lambda *_: dialog.running and dialog.stop())  # closing it stops training
        self.distill_dialog = dialog
        dialog.open()
        return dialog

    def _start_distill(self, request) -> None:
        self.training = True
        self._sync_buttons()
        self.progress_label.setText(QCoreApplication.translate("ModelFlow", "Training a draft …"))
        self._distill.emit(request)

    def _distill_done(self, report: dict) -> None:
        self._distill_ended()
        self.distill_dialog.on_done(report)

    def _distill_failed(self, message: str) -> None:
        self._distill_ended()
        self.distill_dialog.on_failed(message)

    def _distill_ended(self) -> None:
        self.training = False
        self.progress_label.setText(QCoreApplication.translate("ModelFlow", "Draft training finished"))
        if self.target is not None:
            from app.models.calibration import trained_drafts

            self.controls.set_trained_drafts(trained_drafts(self.target))
        self._sync_buttons()

    def load_models(self, target_spec: str, draft_spec: str, anyway=None) -> None:
        """Load in the engine thread; queued behind a running generation, so a draft swap made
        while answering applies to the next message. anyway: auto's target-only Selection, whose fastest
        measured drafter draft_spec names (app/gui/speculation_offer.py)."""
        self.loading = True
        self.queued.accepting = True  # Send during the load queues the question (app/gui/queued_question.py)
        self._sync_buttons()
        self.progress.setMaximum(0)  # busy until the loader reports a fraction
        self.progress.setVisible(True)
        self.progress_label.setText(self.tr("Loading models …"))
        dtype = str(self.settings.value("dtype", "auto"))
        self._load.emit(LoadRequest(target_spec, draft_spec, current=self.target, cancel=self.closing, dtype=dtype,
                                    anyway=anyway))

    def set_target_dtype(self, dtype: str) -> None:
        """The Models menu's dtype picker: stored, and the target reloads in it."""
        self.settings.setValue("dtype", dtype)
        if self.target is not None and not self.loading:
            self.load_models(self.target_spec, self.draft_spec)

    def recheck_choice(self) -> None:
        """After a message: with draft 'auto', fall back to target-only when the last answer measured
        clearly slower than target-only steps timed at the same context, or when the live α, c and verify
        cost predict the chosen draft slower (the load-time probe was optimistic)."""
        auto = self.auto
        if self.draft_spec != AUTO or auto is None or self.drafter is None:
            return
        last = self.chat.messages[-1].stats if self.chat.messages else {}
        measured = last.get("speedup")
        if measured is not None and measured < MEASURED_FLOOR and (last.get("new_tokens") or 0) >= MEASURED_TOKENS:
            self.switched_speedup = measured
            self.switched = QCoreApplication.translate(
                "ModelFlow", "Switched to target-only: the last answer ran at {0:.2f}× target-only with {1} "
                "(against target-only steps timed in this chat).").format(measured, auto.label)
        elif auto.rounds >= RECHECK_ROUNDS and auto.predicted < 1.0:
            p = auto.profile
            self.switched_speedup = auto.predicted
            self.switched = QCoreApplication.translate("ModelFlow", "Switched to target-only: the live acceptance at draft position 1 (α₁ {0:.2f}) and "
                                "draft cost (c {1:.2f}) predict {2} at {3:.2f}× target-only on this machine.").format(
                p.alpha_at(1), p.c, p.label, auto.predicted)
        else:
            return
        self.drafter, self.auto = None, None
        self.controls.set_auto_gamma(None)
        self.stats.set_notice(self.switched)
        self._update_status()
        self.offer.refresh()

    def _on_load_progress(self, text: str, fraction: float) -> None:
        self.progress.setMaximum(1000)
        self.progress.setValue(int(fraction * 1000))
        self.progress_label.setText(text)

    def use_models(self, result: LoadResult) -> None:
        """Install a loaded pair: the loader's signal lands here, and benchmarks call it directly."""
        self.loading = False
        if self.target is not result.target:
            self.stats.baseline_step = None
            self.messages_since_baseline = 0
        self.target, self.drafter = result.target, result.drafter
        self.selection = result.selection
        self.switched = None
        self.auto = result.selection.auto_gamma() if result.selection is not None else None
        self.controls.set_auto_gamma(self.auto)
        if self.drafter is not None:  # the step-through's panels, built while the user types
            self.step.prepare(self.auto.gamma_max if self.auto is not None else self.controls.params().gamma)
        self.stats.set_notice(plot_notice(self.selection))
        from app.models.calibration import trained_drafts  # loaded with the models: torch is in

        self.controls.set_trained_drafts(trained_drafts(result.target))
        self.target_spec, self.draft_spec = result.target.spec, result.draft_spec
        tokenizer = result.target.tokenizer
        self.details.decode = lambda token_id: tokenizer.decode([token_id])
        self.step.set_decoder(self.details.decode)
        self.controls.select(self.controls.target, self.target_spec)
        self.controls.select(self.controls.draft, self.draft_spec)
        self.settings.setValue("target", self.target_spec)
        self.settings.setValue("draft", AUTO if result.anyway else self.draft_spec)  # shown anyway: not kept
        self.progress.setVisible(False)
        self.progress_label.setText(self.tr("Ready · loaded in {0:.1f} s").format(result.seconds))
        self.hide_banner()
        self._update_status()
        self._sync_buttons()
        self.static = None  # compiled for the previous pair
        if self.controls.compile.isChecked():
            self.warm_up_static()
        self._measured_examples(result.selection)
        self._send_pending_example()
        self.queued.release()

    def _on_load_failed(self, message: str) -> None:
        self.loading = False
        self.progress.setVisible(False)
        self.progress_label.setText("")
        if self.target is not None:  # a failed swap keeps the working pair
            self.controls.select(self.controls.target, self.target_spec)
            self.controls.select(self.controls.draft, self.draft_spec)
            box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Could not load the model"), message, parent=self)
            box.open()
        else:
            self.show_banner(self.tr("Could not load the models: {0} — choose another target or draft on the right.")
                             .format(message))
        self._example_pending = None
        self.queued.load_failed()
        self._sync_buttons()

    def _draft_name(self) -> str:
        return self.drafter.name if self.drafter is not None else self.tr("none (target only)")



def plot_notice(selection) -> str | None:
    """What the speedup plot must say about the loaded choice: running target-only, or a hand-picked
    draft predicted slower than target-only. None when the draft is predicted to pay."""
    if selection is None:
        return None
    choice = selection.choice
    if choice.target_only and choice.options:
        return QCoreApplication.translate("ModelFlow", "Running target-only: no draft is predicted to be faster here. {0}").format(_options(choice))
    if not choice.target_only and choice.predicted < 1.0:
        best = choice.options[0] if choice.options else None
        return QCoreApplication.translate("ModelFlow", "Slower than target-only: {0} is predicted at {1:.2f}×, because {2}. Choose draft 'auto'.").format(
            best.label, choice.predicted, _why(best.limit)) if best else None
    return None


def choice_status(selection, auto, gamma_auto: bool, stats, switched: str | None = None) -> tuple[str, str]:
    """(status-bar text, tooltip) for the drafter choice and the live γ."""
    if switched:
        return QCoreApplication.translate("ModelFlow", "Target-only (switched live)"), switched
    if selection is None:
        return "", ""
    choice = selection.choice
    how = QCoreApplication.translate("ModelFlow", "cached timings") if selection.calibration.cached else QCoreApplication.translate("ModelFlow", "timed at load")
    reason = _reason(choice, selection.calibration.device)
    if choice.target_only:
        if not choice.options:
            return QCoreApplication.translate("ModelFlow", "target-only"), reason
        return QCoreApplication.translate("ModelFlow", "Target-only: {0}").format(_options(choice)), f"{reason} [{how}]"
    predicted = auto.predicted if auto is not None and auto.rounds else choice.predicted
    gamma = QCoreApplication.translate("ModelFlow", "γ auto {0}").format(auto.gamma()) if auto is not None and gamma_auto else QCoreApplication.translate("ModelFlow", "γ fixed")
    if predicted < 1.0:
        return QCoreApplication.translate("ModelFlow", "Slower than target-only: predicted {0:.2f}× · {1}").format(predicted, gamma), \
            f"{reason} [{how}]"
    return QCoreApplication.translate("ModelFlow", "{0} · predicted {1:.2f}×").format(gamma, predicted), f"{reason} [{how}]"


def _options(choice) -> str:
    return "; ".join(f"{o.label} {o.predicted:.2f}× ({_why(o.limit)})" for o in choice.options)


def _why(limit) -> str:
    """app.engine.policy.Limit in the user's language (Limit.text is the English)."""
    if limit.kind == "cost":
        return QCoreApplication.translate("Policy", "draft costs {0:.2f} target steps on this {1}").format(
            limit.value, limit.device)
    if limit.kind == "coverage":
        return QCoreApplication.translate("Policy", "it proposes in only {0:.0%} of rounds here").format(limit.value)
    if limit.kind == "tree":
        return QCoreApplication.translate("Policy", "a tree does not pay here: its best, {0} nodes, accepts {1:.2f} "
                                                    "tokens a round for a verify cost of {2:.2f} target steps").format(
            limit.nodes, limit.value, limit.verify)
    return QCoreApplication.translate("Policy", "acceptance α {0:.2f} is too low for a verify cost of {1:.2f} target "
                                                "steps").format(limit.value, limit.verify)


def _reason(choice, device: str) -> str:
    """app.engine.policy.Choice.reason in the user's language."""
    if not choice.options:
        return QCoreApplication.translate("Policy", "target-only: no drafter available")
    if choice.target_only:
        return QCoreApplication.translate("Policy", "target-only: no draft is predicted to be faster on this {0} "
                                                    "({1})").format(device, _options(choice))
    best = choice.options[0]
    if best.nodes:
        return QCoreApplication.translate("Policy", "{0}, tree of {1} nodes: predicted {2:.2f}× target-only").format(
            best.label, best.nodes, best.predicted)
    text = QCoreApplication.translate("Policy", "{0}, γ {1}: predicted {2:.2f}× target-only").format(
        best.label, best.gamma, best.predicted)
    return f"{text} ({_why(best.tree)})" if best.tree is not None else text
