"""The race view: two measured runs of one prompt, replayed side by side, each at its own pace,
with running clocks, tokens/s, tokens and verified tokens per round (where a tree differs from a
chain) and the final speedup in large type. The panes render tokens with
the chat view's own code, fed by the same Player that replays a recording."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.engine.events import RoundEvent, TokenEvent
from app.engine.stats import round_shape
from app.history.records import StoredToken
from app.recording import Recording, Run
from app.session.conversation import Conversation, Message

from .chat_view import ChatView
from .player import SPEEDS, Player
from .theme import Colors

CLOCK_MS = 50
BIG_MAX_PT = 54  # the clocks, tokens/s and speedup: 3× the text size, at most this (28 pt text on stage)


def run_title(run: Run) -> str:
    draft = (run.info.get("draft") or {}).get("name")
    if not draft:
        return QCoreApplication.translate("Race", "target only")
    if any(isinstance(step.round, RoundEvent) and step.round.tree_tokens for step in run.steps):
        return QCoreApplication.translate("Race", "token tree, draft: {0}").format(draft)
    return QCoreApplication.translate("Race", "speculative, draft: {0}").format(draft)


def shape_text(rounds: list[RoundEvent]) -> str:
    """Mean tokens per round and tokens verified per round (a tree's nodes, a chain's drafts, plus one)."""
    shape = round_shape(rounds)
    if shape is None:
        return QCoreApplication.translate("Race", "– tokens / round")
    return QCoreApplication.translate("Race", "{0:.2f} tokens / round · {1:.1f} verified / round").format(
        shape.tokens_per_round, shape.verified_per_round)


class RacePane(QFrame):
    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent, objectName="race_pane")
        box = QVBoxLayout(self)
        box.setContentsMargins(4, 4, 4, 4)
        self.title = QLabel(objectName="race_title", wordWrap=True)
        self.clock = QLabel("0.00 s", objectName="race_clock", alignment=Qt.AlignmentFlag.AlignCenter)
        self.speed = QLabel("– tok/s", objectName="race_speed", alignment=Qt.AlignmentFlag.AlignCenter)
        self.shape = QLabel(objectName="race_shape", alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.conversation = Conversation()  # the pane's one answer, as the run plays
        self.chat = ChatView(colors, self.conversation)
        numbers = QHBoxLayout()
        for w, share in ((self.clock, 2), (self.speed, 3)):  # "0.13 s" is shorter than "317.6 tok/s"
            w.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # two panes fit on stage
            numbers.addWidget(w, share)
        box.addWidget(self.title)
        box.addLayout(numbers)
        box.addWidget(self.shape)
        box.addWidget(self.chat, 1)
        self.player: Player | None = None
        self.tokens = 0
        self.rounds: list[RoundEvent] = []

    def load(self, run: Run) -> Player:
        self.title.setText(run_title(run))
        self.conversation.open(messages=[Message("assistant", stats={})])
        self.tokens = 0
        self.rounds = []
        self.shape.setText(shape_text(self.rounds))
        self.player = Player(run, parent=self)
        self.player.events.connect(self._on_events)
        return self.player

    def _on_events(self, batch: list) -> None:
        tokens = [StoredToken.from_event(e) for e in batch if isinstance(e, TokenEvent)]
        self.conversation.append_tokens(0, tokens)
        rounds = [e for e in batch if isinstance(e, RoundEvent)]
        self.tokens += sum(e.emitted for e in rounds)
        if rounds:
            self.rounds += rounds
            self.shape.setText(shape_text(self.rounds))

    def tick(self) -> None:
        p = self.player
        if p is None:
            return
        seconds = p.run.duration if p.done else p.now()
        self.clock.setText(f"{seconds:.2f} s")
        if seconds > 0 and self.tokens:
            self.speed.setText(QCoreApplication.translate("Race", "{0:.1f} tok/s").format(self.tokens / seconds))

    def rate(self) -> float | None:
        fin = self.player.run.finished if self.player else None
        return fin.new_tokens / fin.elapsed if fin and fin.elapsed else None


class RaceView(QWidget):
    closed = Signal()
    save_requested = Signal()

    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent, objectName="race", visible=False)
        self.recording: Recording | None = None
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        self.note = QLabel(objectName="race_note", wordWrap=True)
        grid = QGridLayout()
        self.panes = [RacePane(colors), RacePane(colors)]
        for i, pane in enumerate(self.panes):
            grid.addWidget(pane, 0, i)
        self.result = QLabel(objectName="race_result", alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        buttons = QHBoxLayout()
        self.again = QPushButton(QCoreApplication.translate("Race", "Replay race"))
        self.speed = QComboBox(toolTip=QCoreApplication.translate("Race", "Playback speed"))
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.save = QPushButton(QCoreApplication.translate("Race", "Save race…"))
        self.close_button = QPushButton(QCoreApplication.translate("Race", "Close race"))
        for w in (self.again, self.speed, self.save):
            buttons.addWidget(w)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        self.controls = QWidget()
        self.controls.setLayout(buttons)
        box.addWidget(self.note)
        box.addLayout(grid, 1)
        box.addWidget(self.result)
        box.addWidget(self.controls)
        self.again.clicked.connect(self.replay)
        self.speed.currentIndexChanged.connect(self._speed_changed)
        self.save.clicked.connect(self.save_requested)
        self.close_button.clicked.connect(self.closed)
        self.timer = QTimer(self, interval=CLOCK_MS, timeout=self._tick)
        self.set_sizes(11)

    def set_sizes(self, base_pt: int) -> None:
        big = min(base_pt * 3, BIG_MAX_PT)
        self.setStyleSheet(
            f"QLabel#race_clock, QLabel#race_speed {{ font-size: {big}pt; font-weight: 700; }}"
            f"QLabel#race_title {{ font-size: {int(base_pt * 1.4)}pt; font-weight: 600; }}"
            f"QLabel#race_shape {{ font-size: {int(base_pt * 1.2)}pt; font-weight: 600; }}"
            f"QLabel#race_result {{ font-size: {big}pt; font-weight: 700; }}"
            f"QLabel#race_note {{ font-size: {base_pt}pt; }}"
        )
        for pane in self.panes:
            font = pane.chat.font()
            font.setPointSize(base_pt)
            pane.chat.setFont(font)
            pane.chat.render_all()

    def set_colors(self, colors: Colors) -> None:
        for pane in self.panes:
            pane.chat.set_colors(colors)

    def show_recording(self, recording: Recording) -> None:
        self.recording = recording
        machine = recording.header.get("machine") or {}
        self.note.setText(QCoreApplication.translate("Race",
            "A side-by-side replay of two measured runs: both decoded the same prompt on {0}, one after "
            "the other, and each plays back at its own measured pace."
        ).format((machine.get("device") or "").upper() or machine.get("platform") or QCoreApplication.translate("Race", "this machine")))
        self.setVisible(True)
        self.replay()

    def replay(self) -> None:
        if self.recording is None:
            return
        self.result.setText("")
        players = [pane.load(run) for pane, run in zip(self.panes, self.recording.runs[:2], strict=False)]
        for player in players:
            player.set_speed(self.speed.currentData())
            player.finished.connect(self._maybe_done)
            player.ended_early.connect(self._maybe_done)
        for player in players:
            player.play()
        self.timer.start()

    def finish(self) -> None:
        """Play both runs to the end at once (screenshots, tests)."""
        for pane in self.panes:
            if pane.player is not None:
                pane.player.finish()
        self._tick()

    def _speed_changed(self) -> None:
        for pane in self.panes:
            if pane.player is not None:
                pane.player.set_speed(self.speed.currentData())

    def _tick(self) -> None:
        for pane in self.panes:
            pane.tick()

    def _maybe_done(self, *_) -> None:
        if not all(p.player is not None and p.player.done for p in self.panes):
            return
        self.timer.stop()
        self._tick()
        a, b = (pane.rate() for pane in self.panes)
        if a and b:
            self.result.setText(QCoreApplication.translate("Race", "Speedup {0:.2f}× (right against left, tokens/s)").format(b / a))
        else:
            self.result.setText(QCoreApplication.translate("Race", "The recording ends before both runs finished"))
