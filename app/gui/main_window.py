"""The main window: wires the chat, the controls, the plots and the history to the engine thread.

Widgets only render; the GenerationWorker and ModelLoader live in one engine QThread, so model
loading and decoding never overlap and the GUI thread never runs a forward pass.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.engine import FinishedEvent, RoundEvent, TokenEvent
from app.history import HistoryError, HistoryStore, StoredToken
from app.paths import user_data_dir

from . import theme, window_settings
from .chat_view import ChatMessage, ChatView
from .controls import ControlsPanel
from .conversations import ConversationsPanel, write_export
from .legend import Legend
from .live_stats import LiveStats, rounds_from_stats
from .model_loader import LoadRequest, LoadResult, ModelLoader
from .plots import PlotsPanel
from .token_details import TokenDetails
from .window_settings import BASE_FONT_PT
from .worker import GenerationRequest, GenerationWorker

FLUSH_MS = 33  # token batches reach the view at most ~30 times a second
BASELINE_STEPS = 6  # target-only steps timed before a message, for the measured speedup
BASELINE_EVERY = 4  # re-measure every this many messages (prompt length and machine load drift)
FONT_RANGE = (8, 40)


def settings_file() -> Path:
    return user_data_dir() / "settings.ini"


class MainWindow(QMainWindow):
    _generate = Signal(object)
    _load = Signal(object)

    def __init__(self, target_spec: str | None = None, draft_spec: str | None = None, autoload: bool = True,
                 parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("SpecLens — exact speculative decoding")
        self.settings = QSettings(str(settings_file()), QSettings.Format.IniFormat)
        self.theme_name = str(self.settings.value("theme", "system"))
        self.colors = theme.apply(QApplication.instance(), self.theme_name)
        self.target = None
        self.drafter = None
        self.target_spec = target_spec or str(self.settings.value("target", "default"))
        self.draft_spec = draft_spec or str(self.settings.value("draft", "self"))
        self.conv_id: int | None = None
        self.answer_index = -1
        self.editing: int | None = None
        self.generating = False
        self.loading = False
        self.cancel = threading.Event()
        self.closing = threading.Event()
        self.pending: list = []
        self.messages_since_baseline = 0
        self.stats = LiveStats()
        self._history_error = None
        try:
            self.store = HistoryStore()
        except HistoryError as exc:  # the app still works, without saving
            self._history_error = str(exc)
            self.store = HistoryStore(Path(":memory:"))
        self._build_ui()
        self._build_menus()
        self._start_engine_thread()
        window_settings.restore(self)
        self.flush_timer = QTimer(self, interval=FLUSH_MS, timeout=self._flush)
        if self._history_error:
            self.show_banner(f"History unavailable, this session is not saved: {self._history_error}")
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._os_scheme_changed)
        if autoload:
            QTimer.singleShot(0, self, lambda: self.load_models(self.target_spec, self.draft_spec))

    # --- construction -------------------------------------------------------------------------
    def _build_ui(self) -> None:
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        self.banner = QLabel(wordWrap=True, objectName="banner", visible=False)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.system_prompt = QLineEdit(objectName="system", clearButtonEnabled=True)
        self.system_prompt.setPlaceholderText("System prompt (optional) — sent before every turn of this chat")
        self.system_prompt.editingFinished.connect(self._system_prompt_edited)
        self.chat = ChatView(self.colors)
        self.chat.token_hovered.connect(self._show_token)
        self.chat.token_clicked.connect(self._show_token)
        self.chat.action.connect(self._message_action)
        self.legend = Legend(self.colors)
        self.input = QPlainTextEdit(objectName="input")
        self.input.setPlaceholderText("Ask something…   (Ctrl+Enter sends, Esc stops)")
        self.input.setFixedHeight(84)
        self.send_button = QPushButton("Send", objectName="primary", toolTip="Ctrl+Enter")
        self.stop_button = QPushButton("Stop", objectName="stop", toolTip="Esc", enabled=False)
        self.send_button.clicked.connect(self.send)
        self.stop_button.clicked.connect(self.stop)
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.input, 1)
        row.addLayout(buttons)
        layout.addWidget(self.banner)
        layout.addWidget(self.system_prompt)
        layout.addWidget(self.chat, 1)
        layout.addWidget(self.legend)
        layout.addLayout(row)
        self.setCentralWidget(central)

        self.conversations = ConversationsPanel(self.store)
        self.conversations.opened.connect(self.open_conversation)
        self.conversations.deleted.connect(self._conversation_deleted)
        self.conversations.new_requested.connect(self.new_chat)
        self.controls = ControlsPanel()
        self.controls.target_chosen.connect(lambda spec: self.load_models(spec, self.draft_spec))
        self.controls.draft_chosen.connect(lambda spec: self.load_models(self.target_spec, spec))
        self.controls.show_rejected_changed.connect(self.chat.set_show_rejected)
        self.details = TokenDetails()
        side = QSplitter(Qt.Orientation.Vertical)
        side.addWidget(self.controls)
        side.addWidget(self.details)
        side.setStretchFactor(0, 0)
        side.setStretchFactor(1, 1)
        self.plots = PlotsPanel(self.stats, self.colors)
        self.docks = {}
        for key, title, widget, area in (
            ("conversations", "Conversations", self.conversations, Qt.DockWidgetArea.LeftDockWidgetArea),
            ("controls", "Controls", side, Qt.DockWidgetArea.RightDockWidgetArea),
            ("plots", "Statistics", self.plots, Qt.DockWidgetArea.BottomDockWidgetArea),
        ):
            dock = QDockWidget(title, self, objectName=key)
            dock.setWidget(widget)
            dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                             | QDockWidget.DockWidgetFeature.DockWidgetClosable
                             | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
            self.addDockWidget(area, dock)
            self.docks[key] = dock
        self.resizeDocks([self.docks["conversations"], self.docks["controls"]], [220, 300], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["plots"]], [340], Qt.Orientation.Vertical)

        bar = self.statusBar()
        self.progress_label = QLabel()
        self.progress = QProgressBar(maximum=0, fixedWidth=140, visible=False)
        bar.addWidget(self.progress)
        bar.addWidget(self.progress_label)
        self.status_labels = {key: QLabel() for key in ("device", "models", "speed", "alpha")}
        for label in self.status_labels.values():
            bar.addPermanentWidget(label)

    def _build_menus(self) -> None:
        file = self.menuBar().addMenu("&File")
        file.addAction("New chat", QKeySequence.StandardKey.New, self.new_chat)
        file.addAction("Export conversation as HTML…", lambda: self._export_conversation("html"))
        file.addAction("Export conversation as Markdown…", lambda: self._export_conversation("md"))
        file.addAction("Export plots (PNG, SVG, CSV)…", self._export_plots)
        file.addSeparator()
        file.addAction("Quit", QKeySequence.StandardKey.Quit, self.close)
        chat = self.menuBar().addMenu("&Chat")
        chat.addAction("Send", QKeySequence("Ctrl+Return"), self.send)
        chat.addAction("Stop", QKeySequence(Qt.Key.Key_Escape), self.stop)
        chat.addAction("Regenerate last answer", QKeySequence("Ctrl+R"), self.regenerate)
        chat.addAction("Copy last answer", QKeySequence("Ctrl+Shift+C"), self.copy_last_answer)
        QShortcut(QKeySequence("Ctrl+Enter"), self, self.send)
        view = self.menuBar().addMenu("&View")
        view.addAction("Larger text", QKeySequence.StandardKey.ZoomIn, lambda: self.zoom(1))
        QShortcut(QKeySequence("Ctrl+="), self, lambda: self.zoom(1))
        view.addAction("Smaller text", QKeySequence.StandardKey.ZoomOut, lambda: self.zoom(-1))
        view.addAction("Reset text size", QKeySequence("Ctrl+0"), lambda: self.zoom(0))
        view.addSeparator()
        themes = view.addMenu("Theme")
        group = QActionGroup(self)
        for name in theme.THEMES:
            action = QAction(name.capitalize(), self, checkable=True, checked=name == self.theme_name)
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            group.addAction(action)
            themes.addAction(action)
        view.addSeparator()
        for dock in self.docks.values():
            view.addAction(dock.toggleViewAction())

    def _start_engine_thread(self) -> None:
        self.engine_thread = QThread(self)
        self.engine_thread.setObjectName("speclens-engine")
        self.worker = GenerationWorker()
        self.loader = ModelLoader()
        for obj in (self.worker, self.loader):
            obj.moveToThread(self.engine_thread)
        self._generate.connect(self.worker.start)
        self._load.connect(self.loader.load)
        self.worker.baseline.connect(self._on_baseline)
        self.worker.events.connect(self._on_events)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        self.loader.progress.connect(self._on_load_progress)
        self.loader.loaded.connect(self.use_models)
        self.loader.failed.connect(self._on_load_failed)
        self.engine_thread.start()

    # --- models -------------------------------------------------------------------------------
    def load_models(self, target_spec: str, draft_spec: str) -> None:
        """Load in the engine thread; queued behind a running generation, so a draft swap made
        while answering applies to the next message."""
        self.loading = True
        self._sync_buttons()
        self.progress.setMaximum(0)  # busy until the loader reports a fraction
        self.progress.setVisible(True)
        self.progress_label.setText("Loading models …")
        self._load.emit(LoadRequest(target_spec, draft_spec, current=self.target, cancel=self.closing))

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
        self.target_spec, self.draft_spec = result.target.spec, result.draft_spec
        tokenizer = result.target.tokenizer
        self.details.decode = lambda token_id: tokenizer.decode([token_id])
        self.controls.select(self.controls.target, self.target_spec)
        self.controls.select(self.controls.draft, self.draft_spec)
        self.settings.setValue("target", self.target_spec)
        self.settings.setValue("draft", self.draft_spec)
        self.progress.setVisible(False)
        self.progress_label.setText(f"Ready · loaded in {result.seconds:.1f} s")
        self.hide_banner()
        self._update_status()
        self._sync_buttons()

    def _on_load_failed(self, message: str) -> None:
        self.loading = False
        self.progress.setVisible(False)
        self.progress_label.setText("")
        if self.target is not None:  # a failed swap keeps the working pair
            self.controls.select(self.controls.target, self.target_spec)
            self.controls.select(self.controls.draft, self.draft_spec)
            box = QMessageBox(QMessageBox.Icon.Warning, "Could not load the model", message, parent=self)
            box.open()
        else:
            self.show_banner(f"Could not load the models: {message} — choose another target or draft on the right.")
        self._sync_buttons()

    def _draft_name(self) -> str:
        return self.drafter.name if self.drafter is not None else "none (target only)"

    # --- chat ---------------------------------------------------------------------------------
    def send(self) -> None:
        text = self.input.toPlainText().strip()
        if not text or self.generating or self.loading or self.target is None:
            return
        if self.editing is not None:
            self._truncate(self.editing)
            self.editing = None
            self.hide_banner()
        try:
            if self.conv_id is None:
                title = " ".join(text.split())[:60]
                self.conv_id = self.store.create_conversation(title, self.system_prompt.text().strip())
            message_id = self.store.add_message(self.conv_id, "user", text)
        except HistoryError as exc:
            self.show_banner(f"Could not save the message: {exc}")
            return
        self.chat.add_message(ChatMessage("user", text, db_id=message_id))
        self.input.clear()
        self.conversations.refresh(self.conv_id)
        self._start_answer()

    def _start_answer(self) -> None:
        system = self.system_prompt.text().strip()
        turns = ([{"role": "system", "content": system}] if system else []) + [
            {"role": m.role, "content": m.text} for m in self.chat.messages
        ]
        try:
            input_ids = self.target.encode_chat(turns)
        except Exception as exc:  # a template that rejects the turns is the model's problem, not a crash
            self.show_banner(f"The chat template failed: {exc}")
            return
        stats = {"target": self.target.name, "draft": self._draft_name()}
        self.answer_index = self.chat.add_message(ChatMessage("assistant", stats=stats))
        self.stats.new_message()
        self.cancel = threading.Event()
        measure = self.stats.baseline_step is None or self.messages_since_baseline >= BASELINE_EVERY
        self.messages_since_baseline = 0 if measure else self.messages_since_baseline + 1
        request = GenerationRequest(self.target, input_ids, self.drafter, self.controls.params, self.cancel,
                                    baseline_steps=BASELINE_STEPS if measure else 0)
        self.generating = True
        self._sync_buttons()
        self.progress_label.setText("Timing target-only steps …" if measure else "Generating …")
        self.flush_timer.start()
        self._generate.emit(request)

    def stop(self) -> None:
        if self.generating:
            self.cancel.set()
        elif self.editing is not None:
            self.editing = None
            self.input.clear()
            self.hide_banner()

    def _flush(self) -> None:
        if not self.pending:
            return
        batch = self.pending[:]
        self.pending.clear()
        tokens = [StoredToken.from_event(e) for e in batch if isinstance(e, TokenEvent)]
        rounds = [e for e in batch if isinstance(e, RoundEvent)]
        if tokens:
            self.chat.append_tokens(self.answer_index, tokens)
        if rounds:
            self.stats.add(rounds)
            self._update_status()
            self.progress_label.setText(f"Generating · round {rounds[-1].round + 1}")

    def _on_events(self, batch: list) -> None:
        self.pending.extend(batch)  # rendered by the flush timer, in the GUI thread

    def _on_baseline(self, seconds: float) -> None:
        self.stats.set_baseline(seconds)

    def _on_finished(self, fin: FinishedEvent) -> None:
        self._flush()
        self._end_answer(partial=fin.reason == "cancelled", fin=fin)
        reasons = {"eos": "end of answer", "length": "max new tokens reached", "cancelled": "stopped",
                   "context": "context full"}
        self.progress_label.setText(f"Done · {reasons.get(fin.reason, fin.reason)}")

    def _on_failed(self, message: str) -> None:
        self._flush()
        self._end_answer(partial=True, fin=None)
        self.show_banner(f"Generation failed: {message}")

    def _end_answer(self, partial: bool, fin: FinishedEvent | None) -> None:
        self.flush_timer.stop()
        message = self.chat.messages[self.answer_index]
        message.partial = partial
        message.content = message.text
        new_tokens = sum(1 for t in message.tokens if t.status != "rejected")
        message.stats.update(self.stats.message_record(fin, new_tokens, self.controls.params()))
        if self.conv_id is not None:
            try:
                message.db_id = self.store.add_message(
                    self.conv_id, "assistant", message.content, message.tokens, message.stats, partial
                )
            except HistoryError as exc:  # e.g. the conversation was deleted meanwhile, or the disk is full
                self.show_banner(f"The answer was not saved: {exc}")
        self.chat.render_all()  # adds the footer: stats and actions
        self.generating = False
        self.conversations.refresh(self.conv_id)
        self._update_status()
        self._sync_buttons()

    def _truncate(self, index: int) -> None:
        """Drop message `index` and everything after it, on screen and in the store."""
        message = self.chat.messages[index]
        if self.conv_id is not None and message.db_id is not None:
            self.store.delete_from(self.conv_id, message.db_id)
        self.chat.set_messages(self.chat.messages[:index])

    def regenerate(self) -> None:
        last = len(self.chat.messages) - 1
        if self.generating or self.loading or self.target is None or last < 0:
            return
        if self.chat.messages[last].role == "assistant":
            self._truncate(last)
        if self.chat.messages and self.chat.messages[-1].role == "user":
            self._start_answer()

    def copy_last_answer(self) -> None:
        answers = [i for i, m in enumerate(self.chat.messages) if m.role == "assistant"]
        if answers:
            self._message_action("copy", answers[-1])

    def _message_action(self, name: str, index: int) -> None:
        if name == "copy":
            QGuiApplication.clipboard().setText(self.chat.messages[index].text)
            self.statusBar().showMessage("Answer copied", 2000)
        elif name == "regenerate" and index == len(self.chat.messages) - 1:
            self.regenerate()
        elif name == "edit" and not self.generating:
            self.editing = index
            self.input.setPlainText(self.chat.messages[index].content)
            self.input.setFocus()
            self.show_banner("Editing an earlier message: Send replaces it and everything after it (Esc cancels).",
                             info=True)

    def _show_token(self, message: int, index: int) -> None:
        if message < len(self.chat.messages) and index < len(self.chat.messages[message].tokens):
            self.details.show_token(self.chat.messages[message].tokens[index])

    def _system_prompt_edited(self) -> None:
        if self.conv_id is not None:
            self.store.set_system_prompt(self.conv_id, self.system_prompt.text().strip())

    # --- conversations ------------------------------------------------------------------------
    def new_chat(self) -> None:
        if self.generating:
            return
        self.conv_id = None
        self.editing = None
        self.chat.set_messages([])
        self.system_prompt.clear()
        self.stats.reset()
        self.conversations.list.clearSelection()
        self.input.setFocus()

    def _conversation_deleted(self, conv_id: int) -> None:
        if conv_id != self.conv_id:
            return
        self.cancel.set()  # an answer into a deleted chat has nowhere to go
        self.conv_id = None
        if self.generating:
            self.worker.finished.connect(self.new_chat, Qt.ConnectionType.SingleShotConnection)
        else:
            self.new_chat()

    def open_conversation(self, conv_id: int) -> None:
        if self.generating or conv_id == self.conv_id:
            return
        try:
            info = self.store.conversation(conv_id)
            stored = self.store.messages(conv_id)
        except HistoryError as exc:
            self.show_banner(str(exc))
            return
        self.conv_id = conv_id
        self.editing = None
        self.system_prompt.setText(info.system_prompt)
        messages = []
        self.stats.reset()
        for m in stored:
            if m.role == "system":
                continue
            messages.append(ChatMessage(m.role, m.content, list(m.tokens), dict(m.stats), m.partial, m.id))
            if m.role == "assistant":
                self.stats.new_message()
                self.stats.add(rounds_from_stats(m.stats))
                if m.stats.get("baseline_step"):
                    self.stats.set_baseline(m.stats["baseline_step"])
        self.chat.set_messages(messages)
        self.conversations.refresh(conv_id)

    def _export_conversation(self, kind: str) -> None:
        if self.conv_id is None:
            self.statusBar().showMessage("Nothing to export yet", 3000)
            return
        self.conversations.export(self.conv_id, kind)

    def export_conversation_to(self, path: Path, kind: str) -> None:
        write_export(self.store, self.conv_id, path, kind)

    def _export_plots(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export plots into folder")
        if folder:
            written = self.plots.export(Path(folder))
            self.statusBar().showMessage(f"Wrote {len(written)} files to {folder}", 4000)

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
        self.colors = theme.apply(QApplication.instance(), name)
        self.chat.set_colors(self.colors)
        self.legend.set_colors(self.colors)
        self.plots.set_colors(self.colors)

    def _os_scheme_changed(self, *_) -> None:
        if self.theme_name == "system":
            self.set_theme("system")

    def zoom(self, step: int) -> None:
        """Ctrl+plus / Ctrl+minus; step 0 resets."""
        self.set_font_size(BASE_FONT_PT if step == 0 else self.chat.font().pointSize() + step)

    def set_font_size(self, size: int) -> None:
        size = max(FONT_RANGE[0], min(FONT_RANGE[1], size))
        for widget in (self.chat, self.input, self.legend):
            font = widget.font()
            font.setPointSize(size)
            widget.setFont(font)
        self.chat.render_all()
        self.legend.set_colors(self.colors)
        self.settings.setValue("font_size", size)

    def _sync_buttons(self) -> None:
        ready = self.target is not None and not self.loading
        self.send_button.setEnabled(ready and not self.generating)
        self.stop_button.setEnabled(self.generating)
        self.controls.set_models_enabled(not self.generating and not self.loading)
        self.controls.draft.setEnabled(not self.loading)

    def _update_status(self) -> None:
        labels = self.status_labels
        if self.target is not None:
            dtype = str(self.target.dtype).removeprefix("torch.")
            labels["device"].setText(f"{self.target.device.type.upper()} · {dtype}")
            labels["models"].setText(f"{self.target.name} ← {self._draft_name()}")
        tps = self.stats.tokens_per_second()
        labels["speed"].setText(f"{tps:.1f} tok/s" if tps else "– tok/s")
        alpha = self.stats.session.alpha
        labels["alpha"].setText(f"α {alpha:.3f}" if alpha is not None else "α –")

    def closeEvent(self, event) -> None:
        """Stop the engine before the window goes: a running round finishes (generation) or the
        current model finishes loading, then the thread exits; nothing is left running."""
        window_settings.save(self)
        self.cancel.set()
        self.closing.set()
        self.hide()
        self.engine_thread.quit()
        self.engine_thread.wait()
        self.flush_timer.stop()
        self.plots.timer.stop()
        self.store.close()
        super().closeEvent(event)

