"""Loading a model pair in the engine thread and installing it: the controls, the step-through, the token
inspector and the status follow the pair; after an answer, auto's live recheck of the drafter and the
check of the machine profile against the live rounds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from app.drafting.registry import AUTO
from app.session import Observers, State

from .choice_text import plot_notice, switch_text
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

    def show_recommended_pairs(self, pairs=None, **gguf):
        """Models → Recommended pairs…; a choice loads through the loader (download progress included). gguf:
        the GGUF pairs' collaborators (PairsDialog's gguf_pairs, fetch, located, speedup), for tests."""
        from app.models import default_device

        from .pairs_dialog import PAIRS, PairsDialog

        device = self.model.target.device if self.model.target is not None else default_device()
        dialog = PairsDialog(device, pairs or PAIRS, parent=self.parent_widget, **gguf)
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
