"""The main window, the composition root: it owns the chat model (app/session), the widgets, the engine
thread, the look and closing, and hands the model and the widgets to composed flows: model_flow (loading),
chat_flow (sending and streaming answers), history_flow (conversations and exports), recording_flow,
compile_flow, training_flow, race_flow, presentation, examples, serve_flow. window_layout builds the
widgets, menus the actions.

Widgets only render; the GenerationWorker and ModelLoader live in one engine QThread, so model
loading and decoding never overlap and the GUI thread never runs a forward pass.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QSettings, QThread, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMainWindow

from app.history import HistoryError, HistoryStore
from app.paths import user_data_dir
from app.session import ChatModel, State

from . import i18n, theme, window_settings
from .chat_flow import ChatFlow
from .compile_flow import CompileFlow
from .distill_dialog import DistillWorker
from .examples import ExampleFlow
from .history_flow import HistoryFlow
from .live_stats import LiveStats
from .menus import build_menus
from .model_flow import ModelFlow, choice_status, switch_text
from .model_loader import ModelLoader
from .preload import after_first_paint
from .presentation import Presentation
from .queued_question import QueuedQuestion
from .race_flow import RaceFlow
from .recording_flow import RecordingFlow
from .speculation_offer import SpeculationOffer
from .training_flow import TrainingFlow
from .window_layout import build_widgets
from .window_settings import BASE_FONT_PT
from .worker import GenerationWorker

# How long closing waits for the engine to reach its next round or loading stage. A round or stage still
# running after that is abandoned (its result would be discarded anyway), so quitting takes about this long.
CLOSE_WAIT_MS = 1000
# Engine threads still finishing an abandoned round or load: a QThread destroyed while running aborts
# the process, and so can a worker deleted under its running slot, so each thread is kept here with
# its workers until it ends (app.run exits without waiting for them).
ABANDONED: list[QThread] = []
_ABANDONED_WORKERS: dict[int, tuple] = {}
FONT_RANGE = (8, 40)


def settings_file() -> Path:
    return user_data_dir() / "settings.ini"


class MainWindow(QMainWindow):
    _generate = Signal(object)
    _load = Signal(object)

    def __init__(self, target_spec: str | None = None, draft_spec: str | None = None, autoload: bool = True,
                 parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("SpecLens — exact speculative decoding"))
        self.settings = QSettings(str(settings_file()), QSettings.Format.IniFormat)
        self.theme_name = str(self.settings.value("theme", "system"))
        self.colors = theme.apply(QApplication.instance(), self.theme_name)
        # The session's facts: the pair, its drafter choice and live γ, the compiled steps, the tree mode and
        # what the engine is doing (app/session). The flows read and change them there; widgets follow.
        self.model = ChatModel(target_spec or str(self.settings.value("target", "default")),
                               draft_spec or str(self.settings.value("draft", "auto")),
                               tree_mode=str(self.settings.value("tree", "auto")))
        self.lab = None  # the worked-example lab window, built on first use (show_lab)
        self.serving = None  # the ServeFlow while Models ▸ Serve on localhost runs
        # before the widgets, whose signals reach them
        self.chat_flow = ChatFlow(self, self.model)
        self.history = HistoryFlow(self, self.model)
        self.model_flow = ModelFlow(self, self.model)
        self.stats = LiveStats()
        self._history_error = None
        try:
            self.store = HistoryStore()
        except HistoryError as exc:  # the app still works, without saving
            self._history_error = str(exc)
            self.store = HistoryStore(Path(":memory:"))
        build_widgets(self)
        self.queued = QueuedQuestion(self)  # a question sent while the models load
        self.offer = SpeculationOffer(self)  # "Show speculation anyway" where auto runs target-only
        self.recordings = RecordingFlow(self, self.model)  # every answer recorded; replays
        self.playback = self.recordings.playback
        self.presentation = Presentation(self, self.stats, self.offer.describe)  # View ▸ Presentation (F5)
        self.readout = self.presentation.readout
        self.examples = ExampleFlow(self, self.model, self.chat)  # the example prompts on the empty chat
        build_menus(self)
        self._start_engine_thread()
        self.race = RaceFlow(self, self.model, self.engine_thread)  # after the engine thread exists
        self.race_view = self.race.view
        self.model.state_changed.connect(lambda _state: self._sync_buttons())  # one sync, from the one state
        window_settings.restore(self)
        if self._history_error:
            self.show_banner(self.tr("History unavailable, this session is not saved: {0}").format(self._history_error))
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
        self.training_flow = TrainingFlow(self, self.model, self.distill_worker)
        self._generate.connect(self.worker.start)
        self._load.connect(self.loader.load)
        self.compile_flow = CompileFlow(self, self.model, self.worker)
        for signal, slot in self._engine_links():
            signal.connect(slot)
        self.engine_thread.start()

    def _engine_links(self) -> list:
        """Every engine signal and the window's slot for it: connected at start, and disconnected on close so
        nothing from an abandoned round or load reaches a closed window. One table for both."""
        worker, loader = self.worker, self.loader
        return [(worker.baseline, self.chat_flow._on_baseline), (worker.events, self.chat_flow._on_events),
                (worker.finished, self.chat_flow._on_finished), (worker.failed, self.chat_flow._on_failed),
                *self.compile_flow.links(worker),
                (loader.progress, self.model_flow._on_load_progress), (loader.loaded, self.model_flow.use_models),
                (loader.failed, self.model_flow._on_load_failed)]

    # --- look and state -----------------------------------------------------------------------
    def show_banner(self, text: str, info: bool = False) -> None:
        self.banner.setObjectName("info" if info else "banner")
        self.banner.setStyleSheet("")  # re-polish for the new object name
        self.banner.setText(text)
        self.banner.setVisible(True)

    def hide_banner(self) -> None:
        self.banner.setVisible(False)

    def set_theme(self, name: str) -> None:
        self.theme_name = name
        self.settings.setValue("theme", name)
        self.colors = theme.apply(QApplication.instance(), name, contrast=self.presentation.on)
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
        self.step.redraw_if_stale()
        self.step.setFocus()


    def set_language(self, choice: str) -> None:
        """Stored for the next start: every widget reads its texts when it is built."""
        i18n.store_choice(choice)
        self.show_banner(self.tr("The language changes when SpecLens next starts."), info=True)

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
        if remember:  # presentation mode's 28 pt is not the user's text size
            self.settings.setValue("font_size", size)

    def _sync_buttons(self) -> None:
        """The buttons follow the chat model's state (connected to its state_changed) and the queued question."""
        model = self.model
        ready = model.target is not None and model.idle
        queueable = self.queued.accepting and not model.training and not self.queued.waiting  # sent once loaded
        self.send_button.setEnabled(ready or (queueable and not model.generating and not model.racing))
        self.stop_button.setEnabled(model.generating or self.queued.waiting)
        self.controls.set_models_enabled(not model.generating and not model.loading)
        self.controls.draft.setEnabled(not model.loading)
        self.offer.refresh()

    def _update_status(self) -> None:
        labels = self.status_labels
        if self.model.target is not None:
            chosen = self.model.target.threads
            threads = self.tr(" · threads: {0}").format(chosen.threads) if chosen is not None else ""
            labels["device"].setText(f"{self.model.target.device.type.upper()} · {self.model.target.kernels}{threads}")
            timed = ", ".join(f"{n}: {ms:.1f} ms" for n, ms in chosen.timings.items()) if chosen is not None else ""
            labels["device"].setToolTip(
                self.tr("CPU threads chosen by timing one decode step at load: {0}").format(timed) if timed
                else self.tr("CPU threads as set (OMP_NUM_THREADS, --threads or one core)") if threads else "")
            labels["models"].setText(f"{self.model.target.name} ← {self.model_flow._draft_name()}")
        tps = self.stats.tokens_per_second()
        labels["speed"].setText(f"{tps:.1f} tok/s" if tps else "– tok/s")
        alpha = self.stats.session.alpha
        labels["alpha"].setText(f"α {alpha:.3f}" if alpha is not None else "α –")
        switched = switch_text(self.model.switched) if self.model.switched is not None else None
        text, why = choice_status(self.model.selection, self.model.auto, self.controls.gamma_is_auto(), self.stats,
                                  switched)
        labels["choice"].setText(text)
        labels["choice"].setToolTip(why)

    def closeEvent(self, event) -> None:
        """Quit mid-work without losing anything and without waiting long: the engine stops before its
        next round (generation) or loading stage; the answer so far is saved, marked partial, and the
        history closes only after that last write. A round or stage that outlasts CLOSE_WAIT_MS is
        abandoned; the tokens already shown are what gets saved."""
        if self.model.closing.is_set():  # closed before: the engine and the history are already shut
            super().closeEvent(event)
            return
        self.presentation.set(False)  # the saved layout is the desktop one
        window_settings.save(self)
        self.chat_flow.cancel.set()
        self.model.closing.set()  # loads stop at their next stage; no waiting work starts any more
        self.training_flow.stop()  # the best checkpoint so far is kept
        self.hide()
        self.engine_thread.quit()
        stopped = self.engine_thread.wait(CLOSE_WAIT_MS)
        # The worker's last signals (tokens, then finished or failed) are queued for this thread: deliver
        # them now, while the history is open, instead of after the window has gone.
        for receiver in (self, self.chat_flow, self.model_flow, self.compile_flow):
            QCoreApplication.sendPostedEvents(receiver, QEvent.Type.MetaCall)
        for signal, slot in (*self._engine_links(), *self.training_flow.links):
            signal.disconnect(slot)  # nothing from an abandoned round or load may reach a closed window
        if self.model.state is State.GENERATING:  # the round in flight outlasted the wait: keep what was shown
            self.chat_flow._flush()
            self.chat_flow._end_answer(partial=True, fin=None)
        self.model.close()
        if not stopped:
            thread = self.engine_thread
            thread.setParent(None)  # not destroyed with the window while it still runs
            ABANDONED.append(thread)
            _ABANDONED_WORKERS[id(thread)] = (self.worker, self.loader, self.distill_worker)
            # let go once it has ended: the workers are then deleted in this thread, after their last slot
            thread.finished.connect(lambda: _ABANDONED_WORKERS.pop(id(thread), None))
        self.chat_flow.flush_timer.stop()
        if self.recordings.player is not None:
            self.recordings.player.timer.stop()
        self.plots.timer.stop()
        self.store.close()
        super().closeEvent(event)
