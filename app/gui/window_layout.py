"""The window's widgets: the chat column in the centre, docks for conversations, controls and
plots, and the status bar. Built once; the flows in chat_flow, history_flow and model_flow use them."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from .chat_view import ChatView
from .controls import ControlsPanel
from .conversations import ConversationsPanel
from .legend import Legend
from .plots import PlotsPanel
from .step_view import RoundGate, StepThrough
from .token_details import TokenDetails


class LayoutMixin:
    def _build_ui(self) -> None:
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(6)
        self.banner = QLabel(wordWrap=True, objectName="banner", visible=False)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.system_prompt = QLineEdit(objectName="system", clearButtonEnabled=True)
        self.system_prompt.setPlaceholderText(self.tr("System prompt (optional) — sent before every turn of this chat"))
        self.system_prompt.editingFinished.connect(self.chat_flow._system_prompt_edited)
        self.chat = ChatView(self.colors)
        self.chat.token_hovered.connect(self.chat_flow._show_token)
        self.chat.token_clicked.connect(self.chat_flow._show_token)
        self.chat.action.connect(self.chat_flow._message_action)
        self.legend = Legend(self.colors)
        self.input = QPlainTextEdit(objectName="input")
        self.input.setPlaceholderText(self.tr("Ask something…   (Ctrl+Enter sends, Esc stops)"))
        self.input.setFixedHeight(84)
        self.send_button = QPushButton(self.tr("Send"), objectName="primary", toolTip="Ctrl+Enter")
        self.stop_button = QPushButton(self.tr("Stop"), objectName="stop", toolTip="Esc", enabled=False)
        self.send_button.clicked.connect(self.chat_flow.send)
        self.stop_button.clicked.connect(self.chat_flow.stop)
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
        self.conversations.opened.connect(self.history.open_conversation)
        self.conversations.deleted.connect(self.history._conversation_deleted)
        self.conversations.new_requested.connect(self.history.new_chat)
        self.controls = ControlsPanel()
        self.controls.target_chosen.connect(lambda spec: self.model_flow.load_models(spec, self.model.draft_spec))
        self.controls.draft_chosen.connect(lambda spec: self.model_flow.load_models(self.model.target_spec, spec))
        self.controls.show_rejected_changed.connect(self.chat.set_show_rejected)
        self.details = TokenDetails()
        side = QSplitter(Qt.Orientation.Vertical)
        # scrolls rather than holding the window taller than a 1366×768 screen
        controls = QScrollArea(widgetResizable=True, frameShape=QScrollArea.Shape.NoFrame)
        controls.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        controls.setWidget(self.controls)
        controls.setMinimumWidth(self.controls.minimumSizeHint().width() + controls.verticalScrollBar().sizeHint().width())
        side.addWidget(controls)
        side.addWidget(self.details)
        side.setStretchFactor(0, 3)
        side.setStretchFactor(1, 1)
        self.plots = PlotsPanel(self.stats, self.colors)
        self.step = StepThrough(self.colors)
        self.round_gate = RoundGate()  # holds the engine between rounds while the step-through is paused
        self.step.pause_changed.connect(self.round_gate.set_paused)
        self.step.step_requested.connect(self.round_gate.step)
        self.docks = {}
        for key, title, widget, area in (
            ("conversations", self.tr("Conversations"), self.conversations, Qt.DockWidgetArea.LeftDockWidgetArea),
            ("controls", self.tr("Controls"), side, Qt.DockWidgetArea.RightDockWidgetArea),
            ("plots", self.tr("Statistics"), self.plots, Qt.DockWidgetArea.BottomDockWidgetArea),
            ("step", self.tr("Step-through"), self.step, Qt.DockWidgetArea.BottomDockWidgetArea),
        ):
            dock = QDockWidget(title, self, objectName=key)
            dock.setWidget(widget)
            dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                             | QDockWidget.DockWidgetFeature.DockWidgetClosable
                             | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
            self.addDockWidget(area, dock)
            self.docks[key] = dock
        self.resizeDocks([self.docks["conversations"], self.docks["controls"]], [220, 300], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(self.docks["plots"], self.docks["step"])
        self.docks["step"].visibilityChanged.connect(  # its tab raised: draw what arrived meanwhile
            lambda visible: visible and QTimer.singleShot(0, self.step.redraw_if_stale))
        self.docks["plots"].raise_()
        self.resizeDocks([self.docks["plots"]], [340], Qt.Orientation.Vertical)

        bar = self.statusBar()
        self.progress_label = QLabel()
        self.progress = QProgressBar(maximum=0, fixedWidth=140, visible=False)
        bar.addWidget(self.progress)
        bar.addWidget(self.progress_label)
        self.status_labels = {key: QLabel() for key in ("choice", "device", "models", "speed", "alpha")}
        self.status_labels["choice"].setObjectName("choice")
        for label in self.status_labels.values():
            bar.addPermanentWidget(label)
