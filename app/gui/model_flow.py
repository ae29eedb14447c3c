"""Loading a model pair in the engine thread and installing it in the window."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QObject
from PySide6.QtWidgets import QMessageBox

from app.models import AUTO
from app.session import State

from .model_loader import LoadRequest, LoadResult


class ModelFlow(QObject):
    """Composed into the window, not a mixin: handed the chat model, which it loads pairs into (LOADING while
    the engine thread loads), and the window whose controls, status bar and progress follow the pair."""

    def __init__(self, window, model) -> None:
        super().__init__(window)
        self.window, self.model = window, model

    def show_recommended_pairs(self, pairs=None):
        """Models → Recommended pairs…; a choice loads through the loader (download progress included)."""
        from app.models import default_device

        from .pairs_dialog import PAIRS, PairsDialog

        device = self.model.target.device if self.model.target is not None else default_device()
        dialog = PairsDialog(device, pairs or PAIRS, parent=self.window)
        dialog.chosen.connect(self.load_models)
        dialog.open()
        return dialog

    def load_models(self, target_spec: str, draft_spec: str, anyway=None) -> None:
        """Load in the engine thread; behind a running answer, the load waits for it to end, so a draft
        swap made while answering applies to the next message. anyway: auto's target-only Selection, whose
        fastest measured drafter draft_spec names (app/gui/speculation_offer.py)."""
        w = self.window
        w.queued.accepting = True  # Send during the load queues the question (app/gui/queued_question.py)

        def start() -> None:
            w.progress.setMaximum(0)  # busy until the loader reports a fraction
            w.progress.setVisible(True)
            w.progress_label.setText(self.tr("Loading models …"))
            dtype = str(w.settings.value("dtype", "auto"))
            w._load.emit(LoadRequest(target_spec, draft_spec, current=self.model.target, cancel=self.model.closing,
                                        dtype=dtype, anyway=anyway, tree=self.model.tree))

        self.model.when_idle(State.LOADING, start)
        w._sync_buttons()

    def set_target_dtype(self, dtype: str) -> None:
        """The Models menu's dtype picker: stored, and the target reloads in it."""
        w = self.window
        w.settings.setValue("dtype", dtype)
        if self.model.target is not None and not self.model.loading:
            self.load_models(self.model.target_spec, self.model.draft_spec)

    def set_tree_mode(self, mode: str) -> None:
        """Models ▸ Token trees: auto, on or off; stored, and the drafter is chosen again with it."""
        w = self.window
        w.settings.setValue("tree", mode)
        self.model.set_tree_mode(mode)
        if self.model.target is not None and not self.model.loading:
            self.load_models(self.model.target_spec, self.model.draft_spec)

    def recheck_choice(self) -> None:
        """After a message: with draft 'auto', the engine policy may switch to target-only (the last answer
        measured clearly slower, or the live α, c and verify cost predict the draft slower); say why."""
        w = self.window
        last = w.chat.messages[-1].stats if w.chat.messages else {}
        switch = self.model.recheck(last.get("speedup"), last.get("new_tokens") or 0)
        if switch is None:
            return
        w.controls.set_auto_gamma(None)
        w.stats.set_notice(switch_text(switch))
        w._update_status()
        w.offer.refresh()

    def _on_load_progress(self, text: str, fraction: float) -> None:
        w = self.window
        w.progress.setMaximum(1000)
        w.progress.setValue(int(fraction * 1000))
        w.progress_label.setText(text)

    def use_models(self, result: LoadResult) -> None:
        """Install a loaded pair: the loader's signal lands here, and benchmarks call it directly."""
        w = self.window
        model = w.model
        if model.install(result.target, result.drafter, result.draft_spec, result.selection):
            w.stats.baseline_step = None
            w.chat_flow.messages_since_baseline = 0
        w.controls.set_auto_gamma(model.auto)
        if model.drafter is not None:  # the step-through's panels, built while the user types
            w.step.prepare(model.gamma_max(w.controls.hand_gamma()))
        w.stats.set_notice(plot_notice(model.selection))
        from app.models.calibration import trained_drafts  # loaded with the models: torch is in

        w.controls.set_trained_drafts(trained_drafts(result.target))
        tokenizer = result.target.tokenizer
        w.details.decode = lambda token_id: tokenizer.decode([token_id])
        w.step.set_decoder(w.details.decode)
        w.controls.select(w.controls.target, model.target_spec)
        w.controls.select(w.controls.draft, model.draft_spec)
        w.settings.setValue("target", model.target_spec)
        w.settings.setValue("draft", AUTO if result.anyway else model.draft_spec)  # shown anyway: not kept
        w.progress.setVisible(False)
        w.progress_label.setText(self.tr("Ready · loaded in {0:.1f} s").format(result.seconds))
        w.hide_banner()
        w._update_status()
        if w.controls.compile.isChecked():
            w.compile_flow.warm_up()  # still loading: Send waits for the compiled steps
        else:
            model.end(State.LOADING)
        w._sync_buttons()
        w.examples.measured(result.selection)
        w.examples.send_pending()
        w.queued.release()

    def _on_load_failed(self, message: str) -> None:
        w = self.window
        w.progress.setVisible(False)
        w.progress_label.setText("")
        if self.model.target is not None:  # a failed swap keeps the working pair
            w.controls.select(w.controls.target, self.model.target_spec)
            w.controls.select(w.controls.draft, self.model.draft_spec)
            box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Could not load the model"), message, parent=self.window)
            box.open()
        else:
            w.show_banner(self.tr("Could not load the models: {0} — choose another target or draft on the right.")
                             .format(message))
        w.examples.load_failed()
        self.model.end(State.LOADING)
        w.queued.load_failed()
        w._sync_buttons()

    def _draft_name(self) -> str:
        return self.model.drafter.name if self.model.drafter is not None else self.tr("none (target only)")



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


def switch_text(switch) -> str:
    """app.engine.policy.Switch (why auto went target-only live) in the user's language (app.models.reasons has the English)."""
    if switch.kind == "measured":
        return QCoreApplication.translate(
            "ModelFlow", "Switched to target-only: the last answer ran at {0:.2f}× target-only with {1} "
            "(against target-only steps timed in this chat).").format(switch.speedup, switch.label)
    return QCoreApplication.translate("ModelFlow", "Switched to target-only: the live acceptance at draft position 1 (α₁ {0:.2f}) and "
                                      "draft cost (c {1:.2f}) predict {2} at {3:.2f}× target-only on this machine.").format(
        switch.alpha1, switch.c, switch.label, switch.speedup)


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
    """app.engine.policy.Limit in the user's language (app.models.reasons has the English)."""
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
    """app.models.reasons.choice_reason in the user's language."""
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
