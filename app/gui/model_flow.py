"""Loading a model pair in the engine thread and installing it: the controls, the step-through, the token
inspector and the status follow the pair; after an answer, auto's live recheck of the drafter and the
check of the machine profile against the live rounds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.drafting.registry import AUTO
from app.session import Observers, State

from .model_loader import LoadRequest, LoadResult

if TYPE_CHECKING:
    from app.session import ChatModel, Conversation

    from .compile_flow import CompileFlow
    from .controls import ControlsPanel
    from .live_stats import LiveStats
    from .model_loader import ModelLoader
    from .queued_question import QueuedQuestion
    from .settings import Settings
    from .status import WindowStatus
    from .step_view import StepThrough
    from .token_details import TokenDetails


class ModelFlow(QObject):
    """Loads pairs and installs them. `loaded` (LoadResult) and `failed` (message) tell the rest of the window
    once a load has ended."""

    _load = Signal(object)  # queued into the engine thread, where the loader lives

    def __init__(self, *, model: ChatModel, conversation: Conversation, settings: Settings, status: WindowStatus,
                 stats: LiveStats, controls: ControlsPanel, step: StepThrough, details: TokenDetails,
                 queued: QueuedQuestion, compile_flow: CompileFlow, loader: ModelLoader,
                 parent: QWidget | None = None) -> None:
        """model: the chat model it loads pairs into (LOADING while the engine thread loads); conversation: its
        last answer decides auto's recheck; settings: the pair, dtype and tree mode are kept there; the
        widgets that follow the pair: controls, step (the step-through), details (the token inspector);
        queued: the question held while a load runs; compile_flow: compiled steps warm up after a load;
        loader: the engine's; parent: the widget its dialogs open over."""
        super().__init__(parent)
        self.model, self.conversation, self.settings, self.status, self.stats = model, conversation, settings, status, stats
        self.controls, self.step, self.details, self.queued, self.compile = controls, step, details, queued, compile_flow
        self.parent_widget = parent
        self.loaded = Observers()  # (LoadResult): the pair is in (compiled steps may still be warming up)
        self.failed = Observers()  # (message)
        self._load.connect(loader.load)
        model.tree_mode_changed.connect(self._tree_mode_changed)

    def show_recommended_pairs(self, pairs=None):
        """Models → Recommended pairs…; a choice loads through the loader (download progress included)."""
        from app.models import default_device

        from .pairs_dialog import PAIRS, PairsDialog

        device = self.model.target.device if self.model.target is not None else default_device()
        dialog = PairsDialog(device, pairs or PAIRS, parent=self.parent_widget)
        dialog.chosen.connect(self.load_models)
        dialog.open()
        return dialog

    def load_models(self, target_spec: str, draft_spec: str, anyway=None, remeasure: bool = False) -> None:
        """Load in the engine thread; behind a running answer, the load waits for it to end, so a draft
        swap made while answering applies to the next message. anyway: auto's target-only Selection, whose
        fastest measured drafter draft_spec names (app/gui/speculation_offer.py). remeasure: time this
        machine again (the target reloads and every timing is taken anew)."""
        self.queued.accept()  # Send during the load queues the question (app/gui/queued_question.py)

        def start() -> None:
            self.status.busy(self.tr("Loading models …"))  # busy until the loader reports a fraction
            dtype = self.settings.dtype
            self._load.emit(LoadRequest(target_spec, draft_spec, current=self.model.target, cancel=self.model.closing,
                                        dtype=dtype, anyway=anyway, tree=self.model.tree, remeasure=remeasure))

        self.model.when_idle(State.LOADING, start)

    def measure_again(self) -> None:
        """Models ▸ Measure this machine again: the loaded pair, every timing taken anew."""
        if self.model.target is not None:
            self.load_models(self.model.target_spec, self.model.draft_spec, remeasure=True)

    def check_machine(self) -> None:
        """After an answer: when the live rounds disagree with the machine profile the pair was chosen by, the
        profile is disputed (the next load measures it again) and the window says so."""
        why = self.model.check_machine()
        if why is not None:
            way = (QCoreApplication.translate("ModelFlow", "slower") if why.ratio > 1
                   else QCoreApplication.translate("ModelFlow", "faster"))
            self.status.show_banner(QCoreApplication.translate(
                "ModelFlow", "Live rounds ran {0:.0f}% {1} than this machine's profile (median of {2} rounds): the "
                "next load measures it again, or now with Models ▸ Measure this machine again.").format(
                abs(why.ratio - 1) * 100, way, why.rounds), info=True)

    def reload(self) -> None:
        """The loaded pair again, as the settings now ask (another dtype, another tree mode)."""
        if self.model.target is not None and not self.model.loading:
            self.load_models(self.model.target_spec, self.model.draft_spec)

    def set_target_dtype(self, dtype: str) -> None:
        """The Models menu's dtype picker: stored, and the target reloads in it."""
        self.settings.dtype = dtype
        self.reload()

    def _tree_mode_changed(self, mode: str) -> None:
        """Models ▸ Token trees changed the chat model's mode: stored, and the drafter is chosen again with it."""
        self.settings.tree = mode
        self.reload()

    def recheck_choice(self) -> None:
        """After an answer: with draft 'auto', the engine policy may switch to target-only (the last answer
        measured clearly slower, or the live α, c and verify cost predict the draft slower); say why."""
        messages = self.conversation.messages
        last = messages[-1].stats if messages else {}
        switch = self.model.recheck(last.get("speedup"), last.get("new_tokens") or 0)
        if switch is not None:
            self.stats.set_notice(switch_text(switch))

    def load_progress(self, text: str, fraction: float) -> None:
        self.status.progress_to(int(fraction * 1000), 1000, text)

    def use_models(self, result: LoadResult) -> None:
        """Install a loaded pair: the loader's signal lands here, and benchmarks call it directly."""
        model, controls = self.model, self.controls
        if model.install(result.target, result.drafter, result.draft_spec, result.selection):
            self.stats.baseline_step = None  # the next answer times target-only steps of this target
        if model.drafter is not None:  # the step-through's panels, built while the user types
            self.step.prepare(model.gamma_max(controls.hand_gamma()))
        self.stats.set_notice(plot_notice(model.selection))
        from app.drafting.auto import trained_drafts  # loaded with the models: torch is in

        controls.set_trained_drafts(trained_drafts(result.target))
        tokenizer = result.target.tokenizer
        self.details.decode = lambda token_id: tokenizer.decode([token_id])
        self.step.set_decoder(self.details.decode)
        controls.select(controls.target, model.target_spec)
        controls.select(controls.draft, model.draft_spec)
        self.settings.target = model.target_spec
        self.settings.draft = AUTO if result.anyway else model.draft_spec  # shown anyway: not kept
        self.status.done(self.tr("Ready · loaded in {0:.1f} s").format(result.seconds))
        self.status.hide_banner()
        self.status.refresh()
        if not self.compile.after_load():  # compiled steps warm up still LOADING: Send waits for them
            model.end(State.LOADING)
        self.loaded.emit(result)

    def load_failed(self, message: str) -> None:
        self.status.done("")
        if self.model.target is not None:  # a failed swap keeps the working pair
            self.controls.select(self.controls.target, self.model.target_spec)
            self.controls.select(self.controls.draft, self.model.draft_spec)
            box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Could not load the model"), message,
                              parent=self.parent_widget)
            box.open()
        else:
            self.status.show_banner(self.tr("Could not load the models: {0} — choose another target or draft on the "
                                            "right.").format(message))
        self.failed.emit(message)
        self.model.end(State.LOADING)
        self.queued.load_failed()


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
    """app.engine.policy.Switch (why auto went target-only live) in the user's language (app.drafting.reasons has the English)."""
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
    if choice.tree and auto is not None:  # a sized tree: its budget and what it yields, live
        return QCoreApplication.translate("ModelFlow", "tree {0} · {1:.1f} tokens a round · auto's plan {2:.2f}×").format(
            choice.nodes, auto.tokens_per_round, predicted), f"{reason} [{how}]"
    gamma = QCoreApplication.translate("ModelFlow", "γ auto {0}").format(auto.gamma()) if auto is not None and gamma_auto else QCoreApplication.translate("ModelFlow", "γ fixed")
    if predicted < 1.0:
        return QCoreApplication.translate("ModelFlow", "Slower than target-only: auto's plan {0:.2f}× · {1}").format(predicted, gamma), \
            f"{reason} [{how}]"
    return QCoreApplication.translate("ModelFlow", "{0} · auto's plan {1:.2f}×").format(gamma, predicted), f"{reason} [{how}]"


def _options(choice) -> str:
    return "; ".join(f"{o.label} {o.predicted:.2f}× ({_why(o.limit)})" for o in choice.options)


def _why(limit) -> str:
    """app.engine.policy.Limit in the user's language (app.drafting.reasons has the English)."""
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
    """app.drafting.reasons.choice_reason in the user's language."""
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
