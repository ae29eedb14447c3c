"""The main window, the composition root: it owns the chat model and the conversation (app/session), the
widgets, the engine thread, the look and closing, and hands each flow its collaborators (the models, the
store, the status sink, the widgets it drives, and the other flows it calls) rather than itself:
model_flow (loading), chat_flow (what the user does to the chat), answer_flow (the answer streaming,
whatever its source), history_flow (conversations and exports), recording_flow (saving and replaying
recordings), serve_flow, compile_flow, training_flow, race_flow, presentation, examples. window_layout
builds the widgets, menus the actions; the wiring of one part's outcome to the next is here.

Widgets only render; the GenerationWorker and ModelLoader live in one engine QThread, so model
loading and decoding never overlap and the GUI thread never runs a forward pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QEvent, Qt, QThread
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
)

from app.history import HistoryError, HistoryStore
from app.session import ChatModel, Conversation, State

from . import i18n, theme, window_settings
from .answer_flow import AnswerFlow
from .answer_recorder import AnswerRecorder
from .chat_flow import ChatFlow
from .compile_flow import CompileFlow
from .distill_dialog import DistillWorker
from .examples import ExampleFlow
from .history_flow import HistoryFlow
from .live_stats import LiveStats
from .menus import build_menus
from .model_flow import ModelFlow
from .model_loader import ModelLoader
from .preload import after_first_paint
from .presentation import Presentation
from .qapplication import application
from .race_flow import RaceFlow
from .recording_flow import RecordingFlow
from .send_buttons import SendButtons
from .serve_flow import ServeFlow
from .settings import BASE_FONT_PT, Settings
from .speculation_offer import SpeculationOffer
from .training_flow import TrainingFlow
from .window_layout import build_widgets
from .window_settings import STEP_PX
from .worker import GenerationWorker

if TYPE_CHECKING:
    from .chat_view import ChatView
    from .controls import ControlsPanel
    from .conversations import ConversationsPanel
    from .lab import LabWindow
    from .legend import Legend
    from .playback_bar import PlaybackBar
    from .plots import PlotsPanel
    from .queued_question import QueuedQuestion
    from .race_view import RaceView
    from .round_gate import RoundGate
    from .status import WindowStatus
    from .step_view import StepThrough
    from .token_details import TokenDetails

# How long closing waits for the engine to reach its next round or loading stage. A round or stage still
# running after that is abandoned (its result would be discarded anyway), so quitting takes about this long.
CLOSE_WAIT_MS = 1000
# Engine threads still finishing an abandoned round or load: a QThread destroyed while running aborts
# the process, and so can a worker deleted under its running slot, so each thread is kept here with
# its workers until it ends (app.run exits without waiting for them).
ABANDONED: list[QThread] = []
_ABANDONED_WORKERS: dict[int, tuple] = {}
FONT_RANGE = (8, 40)


class MainWindow(QMainWindow):
    # the widgets, made by window_layout.build_widgets
    controls: ControlsPanel
    status: WindowStatus
    system_prompt: QLineEdit
    race_view: RaceView
    chat: ChatView
    legend: Legend
    playback: PlaybackBar
    input: QPlainTextEdit
    queued: QueuedQuestion
    send_button: QPushButton
    stop_button: QPushButton
    conversations: ConversationsPanel
    details: TokenDetails
    plots: PlotsPanel
    step: StepThrough
    round_gate: RoundGate
    docks: dict[str, QDockWidget]
    column: QVBoxLayout
    tree_actions: QActionGroup  # Models ▸ Token trees, made by menus.build_menus
    # the flows, made by _compose
    answer_recorder: AnswerRecorder
    answers: AnswerFlow
    presentation: Presentation
    race: RaceFlow
    recordings: RecordingFlow
    chat_flow: ChatFlow
    history: HistoryFlow
    compile_flow: CompileFlow
    model_flow: ModelFlow
    training_flow: TrainingFlow
    offer: SpeculationOffer
    examples: ExampleFlow
    serve: ServeFlow
    buttons: SendButtons
    lab: LabWindow | None

    def __init__(self, target_spec: str | None = None, draft_spec: str | None = None, autoload: bool = True,
                 parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("SpecLens — exact speculative decoding"))
        self.settings = Settings()
        self.theme_name = self.settings.theme
        self.colors = theme.apply(application(), self.theme_name)
        # The session's facts: the pair, its drafter choice and live γ, the compiled steps, the tree mode and
        # what the engine is doing (ChatModel); the open chat and the answer streaming into it (Conversation).
        # The flows read and change them there; widgets follow.
        self.model = ChatModel(target_spec or self.settings.target, draft_spec or self.settings.draft,
                               tree_mode=self.settings.tree)
        self.conversation = Conversation()
        self.stats = LiveStats()
        self.lab = None  # the worked-example lab window, built on first use (show_lab)
        history_error = None
        try:
            self.store = HistoryStore()
        except HistoryError as exc:  # the app still works, without saving
            history_error = str(exc)
            self.store = HistoryStore(Path(":memory:"))
        build_widgets(self)
        self._start_engine_thread()
        self._compose()
        build_menus(self)
        for signal, slot in self._engine_links():
            signal.connect(slot)
        self.engine_thread.start()
        window_settings.restore(self)
        self.input.setFocus()  # the window's focus widget: it has the keyboard once the window shows
        if history_error:
            self.status.show_banner(self.tr("History unavailable, this session is not saved: {0}").format(history_error))
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._os_scheme_changed)
        if autoload:
            after_first_paint(self, lambda: self.model_flow.load_models(self.model.target_spec, self.model.draft_spec))

    def _start_engine_thread(self) -> None:
        self.engine_thread = QThread(self)
        self.engine_thread.setObjectName("speclens-engine")
        self.worker = GenerationWorker()
        self.loader = ModelLoader()
        self.distill_worker = DistillWorker()
        for obj in (self.worker, self.loader, self.distill_worker):
            obj.moveToThread(self.engine_thread)

    def _compose(self) -> None:
        """The flows, each handed what it needs, and the wiring of one's outcome to another."""
        model, conversation, store, status, stats = self.model, self.conversation, self.store, self.status, self.stats
        controls = self.controls
        self.answer_recorder = AnswerRecorder(model, status)  # every decoded answer recorded as it streams
        self.answers = AnswerFlow(conversation, model, store, status, stats, self.step, self.answer_recorder, self)
        # before the race, which hides its readout; what it describes is known once the offer is built
        self.presentation = Presentation(self, stats, lambda: self.offer.describe(), self.playback, self.race_view)
        self.column.insertWidget(0, self.presentation.readout)
        self.race = RaceFlow(model=model, conversation=conversation, status=status, controls=controls,
                             recorder=self.answer_recorder, input_box=self.input, view=self.race_view,
                             column=[self.system_prompt, self.chat, self.legend, self.input, self.send_button,
                                     self.stop_button, self.playback, self.presentation.readout],
                             side=[self.docks["plots"], self.docks["controls"]], on_stage=lambda: self.presentation.on,
                             engine_thread=self.engine_thread, parent=self)
        self.recordings = RecordingFlow(conversation, model, self.answers, self.answer_recorder, status, self.playback,
                                        self.details, self.race, self)
        self.chat_flow = ChatFlow(conversation=conversation, model=model, store=store, status=status, answers=self.answers,
                                  queued=self.queued, input_box=self.input, controls=controls,
                                  round_gate=self.round_gate, details=self.details, recordings=self.recordings,
                                  stats=stats, worker=self.worker, parent=self)
        self.history = HistoryFlow(conversation, model, store, status, stats, self.conversations, self.input,
                                   self.plots, self)
        self.compile_flow = CompileFlow(model, self.worker, controls, status, stats, self)
        self.model_flow = ModelFlow(model=model, conversation=conversation, settings=self.settings, status=status,
                                    stats=stats, controls=controls, step=self.step, details=self.details,
                                    queued=self.queued, compile_flow=self.compile_flow, loader=self.loader, parent=self)
        load = self.model_flow.load_models
        self.training_flow = TrainingFlow(model, self.distill_worker, status, controls, load, self)
        self.offer = SpeculationOffer(model, controls, stats, status, self.plots, load, self.recordings)
        self.examples = ExampleFlow(model, conversation, self.chat, status, self.input, load, self.chat_flow.send)
        self.serve = ServeFlow(conversation, model, store, status, self.answers, controls,
                               QAction(self.tr("Serve on localhost"), self, checkable=True), self)
        self.buttons = SendButtons(model, self.queued, self.send_button, self.stop_button, controls)

        # the widgets' signals
        self.system_prompt.textChanged.connect(conversation.set_system_prompt)
        conversation.system_prompt_changed.connect(self._show_system_prompt)
        self.system_prompt.editingFinished.connect(self.chat_flow.system_prompt_edited)
        self.chat.token_hovered.connect(self.chat_flow.show_token)
        self.chat.token_clicked.connect(self.chat_flow.show_token)
        self.chat.action.connect(self.chat_flow.message_action)
        self.send_button.clicked.connect(self.chat_flow.send)
        self.stop_button.clicked.connect(self.chat_flow.stop)
        self.conversations.opened.connect(self.history.open_conversation)
        self.conversations.deleted.connect(self.history.conversation_deleted)
        self.conversations.new_requested.connect(self.history.new_chat)
        controls.target_chosen.connect(lambda spec: load(spec, model.draft_spec))
        controls.draft_chosen.connect(lambda spec: load(model.target_spec, spec))

        # the models' observers
        conversation.opened.connect(stats.reset)  # the statistics and the step-through are the open chat's
        conversation.opened.connect(self.step.clear)
        model.state_changed.connect(lambda state: self.step.set_busy(state is not State.IDLE))
        conversation.answer_ended.connect(lambda _index: self.model_flow.recheck_choice())
        conversation.answer_ended.connect(lambda _index: self.model_flow.check_machine())
        conversation.answer_ended.connect(lambda _index: status.refresh())
        conversation.answer_ended.connect(lambda _index: self.focus_input())  # the next question, typed at once

        # one part's outcome, the next part's start
        self.model_flow.loaded.connect(lambda result: self.examples.measured(result.selection))
        self.model_flow.loaded.connect(lambda result: self.examples.send_pending())
        self.model_flow.loaded.connect(lambda result: self.chat_flow.release_queued())
        self.model_flow.failed.connect(self.examples.load_failed)
        self.compile_flow.ended.connect(self.chat_flow.release_queued)

    def _engine_links(self) -> list:
        """Every engine signal and the part's slot for it: connected at start, and disconnected on close so
        nothing from an abandoned round or load reaches a closed window. One table for both."""
        worker, loader, answers = self.worker, self.loader, self.answers
        return [(worker.baseline, answers.baseline), (worker.events, answers.events),
                (worker.finished, answers.finished), (worker.failed, answers.failed),
                *self.compile_flow.links(worker),
                (loader.progress, self.model_flow.load_progress), (loader.loaded, self.model_flow.use_models),
                (loader.failed, self.model_flow.load_failed)]

    def _show_system_prompt(self, text: str) -> None:
        if text != self.system_prompt.text():
            self.system_prompt.setText(text)

    # --- look and state -----------------------------------------------------------------------
    def set_theme(self, name: str) -> None:
        self.theme_name = name
        self.settings.theme = name
        self.colors = theme.apply(application(), name, contrast=self.presentation.on)
        self.chat.set_colors(self.colors)
        self.race_view.set_colors(self.colors)
        self.legend.set_colors(self.colors)
        self.plots.set_colors(self.colors)
        self.step.set_colors(self.colors)
        if self.lab is not None:
            self.lab.set_colors(self.colors)

    def show_step_through(self) -> None:
        """Raise the step-through dock and give it the keyboard, so → and ← step at once."""
        dock = self.docks["step"]
        dock.show()
        dock.raise_()
        if dock.height() < STEP_PX:  # below the chat, tall enough for its cards
            self.resizeDocks([dock], [STEP_PX], Qt.Orientation.Vertical)
        self.step.redraw_if_stale()
        self.step.setFocus()

    def focus_input(self) -> None:
        """The input takes the keyboard, unless the step-through has it (→ and ← step there)."""
        focused = QApplication.focusWidget()
        if focused is None or not self.docks["step"].isAncestorOf(focused):
            self.input.setFocus()

    def set_language(self, choice: str) -> None:
        """Stored for the next start: every widget reads its texts when it is built."""
        i18n.store_choice(choice)
        self.status.show_banner(self.tr("The language changes when SpecLens next starts."), info=True)

    def show_lab(self):
        """The worked-example lab, one window per main window, created on first use."""
        from .lab import LabWindow

        if self.lab is None:
            self.lab = LabWindow(self.colors, self)
            self.lab.resize(1200, 760)
        self.lab.show()
        self.lab.raise_()
        return self.lab

    def _os_scheme_changed(self, *_) -> None:
        if self.theme_name == "system":
            self.set_theme("system")

    def zoom(self, step: int) -> None:
        """Ctrl+plus / Ctrl+minus; step 0 resets."""
        self.set_font_size(BASE_FONT_PT if step == 0 else self.chat.font().pointSize() + step)

    def set_font_size(self, size: int, remember: bool = True) -> None:
        size = max(FONT_RANGE[0], min(FONT_RANGE[1], size))
        for widget in (self.chat, self.input, self.legend):
            font = widget.font()
            font.setPointSize(size)
            widget.setFont(font)
        self.chat.render_all()
        self.legend.set_colors(self.colors)
        self.step.tree.set_point_size(size)  # a token tree is read as text: it follows the text size
        self.race_view.set_sizes(size)
        if remember:  # presentation mode's 28 pt is not the user's text size
            self.settings.font_size = size

    def escape(self) -> None:
        """Esc: leaves presentation mode, else stops the answer (or gives a queued question back, or cancels an edit)."""
        if self.presentation.on:
            self.presentation.set(False)
        else:
            self.chat_flow.stop()

    def start_replay(self, recording, title: str, presentation: bool, speed: float) -> None:
        """`speclens replay`: the window opened without models; play at once, on stage if asked."""
        if presentation:
            self.presentation.set(True)
        self.recordings.play(recording, title, speed=speed)

    def closeEvent(self, event) -> None:
        """Quit mid-work without losing anything and without waiting long: the engine stops before its
        next round (generation) or loading stage; the answer so far is saved, marked partial, and the
        history closes only after that last write. A round or stage that outlasts CLOSE_WAIT_MS is
        abandoned; the tokens already shown are what gets saved."""
        if self.model.closing.is_set():  # closed before: the engine and the history are already shut
            super().closeEvent(event)
            return
        if self.serve.serving:
            self.serve.stop()  # its last answer is saved while the history is open
        self.presentation.set(False)  # the saved layout is the desktop one
        window_settings.save(self)
        self.answers.stop()
        self.model.closing.set()  # loads stop at their next stage; no waiting work starts any more
        self.training_flow.stop()  # the best checkpoint so far is kept
        self.hide()
        self.engine_thread.quit()
        stopped = self.engine_thread.wait(CLOSE_WAIT_MS)
        # The worker's last signals (tokens, then finished or failed) are queued for this thread: deliver
        # them now, while the history is open, instead of after the window has gone.
        for receiver in (self, self.answers, self.model_flow, self.compile_flow):
            QCoreApplication.sendPostedEvents(receiver, QEvent.Type.MetaCall)
        for signal, slot in (*self._engine_links(), *self.training_flow.links):
            signal.disconnect(slot)  # nothing from an abandoned round or load may reach a closed window
        if self.model.state is State.GENERATING:  # the round in flight outlasted the wait: keep what was shown
            self.answers.cut()
        self.model.close()
        if not stopped:
            thread = self.engine_thread
            thread.setParent(None)  # not destroyed with the window while it still runs
            ABANDONED.append(thread)
            _ABANDONED_WORKERS[id(thread)] = (self.worker, self.loader, self.distill_worker)
            # let go once it has ended: the workers are then deleted in this thread, after their last slot
            thread.finished.connect(lambda: _ABANDONED_WORKERS.pop(id(thread), None))
        self.answers.close()
        self.recordings.close()
        self.plots.timer.stop()
        self.store.close()
        super().closeEvent(event)
