"""The window's widgets: the chat column in the centre at full height (the banner, the system prompt, the
race view, the chat, the legend, the playback bar, the queued question and the input row), the
conversations dock on the left, a side column on the right with the statistics and the controls as two
tabbed docks (the statistics in front), the step-through dock below, hidden until View ▸ Step through
rounds shows it, and the status bar. Built once, before the flows that drive them; the window wires their
signals to the flows."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
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
from .playback_bar import PlaybackBar
from .plots import PlotsPanel
from .queued_question import QueuedQuestion
from .race_view import RaceView
from .round_gate import RoundGate
from .status import WindowStatus
from .step_view import StepThrough
from .token_details import TokenDetails


def build_widgets(w) -> None:
    """The widgets of window `w`, which holds the chat model (`model`), the conversation, the live statistics
    and the history store they show."""
    w.controls = ControlsPanel()
    w.status = WindowStatus(w.model, w.stats, w.controls.gamma_is_auto, w.statusBar(), w)
    central = QWidget()
    layout = QVBoxLayout(central)
    layout.setContentsMargins(10, 8, 10, 8)
    layout.setSpacing(6)
    w.system_prompt = QLineEdit(objectName="system", clearButtonEnabled=True)
    w.system_prompt.setPlaceholderText(QCoreApplication.translate("Layout", "System prompt (optional) — sent before every turn of this chat"))
    w.race_view = RaceView(w.colors)
    w.chat = ChatView(w.colors, w.conversation)
    w.legend = Legend(w.colors)
    w.playback = PlaybackBar()
    w.input = QPlainTextEdit(objectName="input")
    w.input.setPlaceholderText(QCoreApplication.translate("Layout", "Ask something…   (Ctrl+Enter sends, Esc stops)"))
    w.input.setFixedHeight(84)
    w.queued = QueuedQuestion(w.input)  # a question sent while the models load
    w.send_button = QPushButton(QCoreApplication.translate("Layout", "Send"), objectName="primary", toolTip="Ctrl+Enter")
    w.stop_button = QPushButton(QCoreApplication.translate("Layout", "Stop"), objectName="stop", toolTip="Esc", enabled=False)
    buttons = QVBoxLayout()
    buttons.addWidget(w.send_button)
    buttons.addWidget(w.stop_button)
    buttons.addStretch(1)
    row = QHBoxLayout()
    row.addWidget(w.input, 1)
    row.addLayout(buttons)
    layout.addWidget(w.status.banner)
    layout.addWidget(w.system_prompt)
    layout.addWidget(w.race_view, 1)
    layout.addWidget(w.chat, 1)
    layout.addWidget(w.legend)
    layout.addWidget(w.playback)
    layout.addWidget(w.queued.note)  # just above the input row
    layout.addLayout(row)
    w.setCentralWidget(central)
    w.column = layout  # the chat column: the presentation's readout goes on top

    w.conversations = ConversationsPanel(w.store, w.conversation)
    w.controls.show_rejected_changed.connect(w.chat.set_show_rejected)
    w.details = TokenDetails()
    side = QSplitter(Qt.Orientation.Vertical)
    # scrolls rather than holding the window taller than a 1366×768 screen
    controls = QScrollArea(widgetResizable=True, frameShape=QScrollArea.Shape.NoFrame)
    controls.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    controls.setWidget(w.controls)
    controls.setMinimumWidth(w.controls.minimumSizeHint().width() + controls.verticalScrollBar().sizeHint().width())
    side.addWidget(controls)
    side.addWidget(w.details)
    side.setStretchFactor(0, 3)
    side.setStretchFactor(1, 1)
    w.plots = PlotsPanel(w.stats, w.colors)
    w.step = StepThrough(w.colors)
    w.round_gate = RoundGate()  # holds the engine between rounds while the step-through is paused
    w.step.pause_changed.connect(w.round_gate.set_paused)
    w.step.step_requested.connect(w.round_gate.step)
    w.docks = {}
    for key, title, widget, area in (
        ("conversations", QCoreApplication.translate("Layout", "Conversations"), w.conversations, Qt.DockWidgetArea.LeftDockWidgetArea),
        ("controls", QCoreApplication.translate("Layout", "Controls"), side, Qt.DockWidgetArea.RightDockWidgetArea),
        ("plots", QCoreApplication.translate("Layout", "Statistics"), w.plots, Qt.DockWidgetArea.RightDockWidgetArea),
        ("step", QCoreApplication.translate("Layout", "Step-through"), w.step, Qt.DockWidgetArea.BottomDockWidgetArea),
    ):
        dock = QDockWidget(title, w, objectName=key)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        w.addDockWidget(area, dock)
        w.docks[key] = dock
    w.tabifyDockWidget(w.docks["plots"], w.docks["controls"])  # one side column: the figures, the controls
    w.docks["plots"].raise_()
    w.docks["step"].hide()  # wide, and read on demand: it would take the chat's height
    w.docks["step"].visibilityChanged.connect(  # shown or raised: draw what arrived meanwhile
        lambda visible: visible and QTimer.singleShot(0, w.step.redraw_if_stale))

