"""The bar under the chat while a recording plays: pause, step one round, speed, progress."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QPushButton

from .player import SPEEDS, Player


class PlaybackBar(QFrame):
    closed = Signal()

    def __init__(self, parent=None) -> None:
        super().__init__(parent, objectName="playback", visible=False)
        self.player: Player | None = None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.title = QLabel()
        self.pause_button = QPushButton(self.tr("Pause"), toolTip=self.tr("Space"))
        self.step_button = QPushButton(self.tr("Step one round"), toolTip=self.tr("Right arrow"))
        self.speed = QComboBox(toolTip=self.tr("Playback speed"))
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.progress = QLabel()
        self.close_button = QPushButton(self.tr("Close replay"))
        for w in (self.title, self.pause_button, self.step_button, self.speed, self.progress):
            row.addWidget(w)
        row.addStretch(1)
        row.addWidget(self.close_button)
        self.pause_button.clicked.connect(self.toggle)
        self.step_button.clicked.connect(self.step)
        self.speed.currentIndexChanged.connect(lambda _: self.player and self.player.set_speed(self.speed.currentData()))
        self.close_button.clicked.connect(self.closed)

    def attach(self, player: Player, title: str) -> None:
        self.player = player
        player.set_speed(self.speed.currentData())
        player.position.connect(self._position)
        player.finished.connect(self._sync)
        player.ended_early.connect(self._sync)
        self.title.setText(title)
        self._position(0, player.rounds)
        self.setVisible(True)

    def detach(self) -> None:
        """The replay closed: the bar goes until the next one."""
        self.player = None
        self.setVisible(False)

    def toggle(self) -> None:
        if self.player is not None:
            self.player.toggle()
            self._sync()

    def step(self) -> None:
        if self.player is not None:
            self.player.step()
            self._sync()

    def _position(self, played: int, total: int) -> None:
        self.progress.setText(self.tr("round %1 of %2").replace("%1", str(played)).replace("%2", str(total)))
        self._sync()

    def _sync(self, *_) -> None:
        p = self.player
        playing = p is not None and p.playing
        self.pause_button.setText(self.tr("Pause") if playing else self.tr("Play"))
        self.pause_button.setEnabled(p is not None and not p.done)
        self.step_button.setEnabled(p is not None and not p.done)
