"""Round step-through: pause a generation and walk its rounds with → and ←, seeing for every
drafted position what p and q gave, the coin u against min(1, p/q), and where the round's last
token came from. It reads engine events only (RoundEvent carries the whole acceptance test), so a
replayed recording steps exactly like a live answer."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QScrollArea, QSplitter, QVBoxLayout, QWidget

from app.engine import RoundEvent, TokenEvent
from app.history import palette

from .step_panels import OutcomePanel, PositionPanel, _escape, short
from .theme import Colors
from .tree_panel import TREE_MIN_WIDTH, TreePanel


class StepThrough(QWidget):
    """Rounds of the current answer, one at a time. `pause_changed(bool)` asks the window to hold
    the engine; `step_requested()` asks for one more round while paused at the newest one."""

    pause_changed = Signal(bool)
    step_requested = Signal()

    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("stepthrough")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.colors = colors
        self.rounds: list[RoundEvent] = []
        self.texts: dict[int, str] = {}  # token id -> text, from the events, when no tokenizer is set
        self.decoder: Callable[[int], str] | None = None
        self.index = -1
        self.follow = True  # show each new round as it arrives
        self.live = False  # a generation (or replay) is feeding this view
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        bar = QHBoxLayout()
        self.pause_button = QPushButton(self.tr("Pause"), checkable=True,
                                        toolTip=self.tr("Hold the generation between rounds (Space)"))
        self.prev_button = QPushButton(self.tr("◀ Previous"), toolTip=self.tr("Previous round (←)"))
        self.next_button = QPushButton(self.tr("Next ▶"), toolTip=self.tr("Next round (→); when paused at the "
                                                                          "newest round, runs one more"))
        self.latest_button = QPushButton(self.tr("Latest"), toolTip=self.tr("Jump to the newest round and follow"))
        self.pause_button.toggled.connect(self.set_paused)
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.latest_button.clicked.connect(self.show_latest)
        self.header = QLabel(textFormat=Qt.TextFormat.RichText)
        for w in (self.pause_button, self.prev_button, self.next_button, self.latest_button):
            bar.addWidget(w)
        bar.addWidget(self.header, 1)
        layout.addLayout(bar)
        self.drafts = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        layout.addWidget(self.drafts)
        self.tree = TreePanel()  # a token-tree round's tree; hidden for chains
        self.row = QHBoxLayout()
        self.row.setSpacing(6)
        self.row_widget = holder = QWidget()
        holder.setLayout(self.row)
        self.cards = QScrollArea(widgetResizable=True)
        self.cards.setWidget(holder)
        self.cards.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        # The tree and the cards share the space (see _arrange); the cards take what a resize adds.
        self.split = QSplitter(childrenCollapsible=False)
        self.split.addWidget(self.tree)
        self.split.addWidget(self.cards)
        self.split.setStretchFactor(0, 0)
        self.split.setStretchFactor(1, 1)
        # the (orientation, size, cards) the split was last sized for; None while no tree shows
        self._split_for: tuple[Qt.Orientation, QSize, QSize] | None = None
        layout.addWidget(self.split, 1)
        self.positions: list[PositionPanel] = []  # grown to the largest γ seen, then reused
        self._stale = False  # rounds arrived while hidden: render on show
        self._wanted = 0  # panels to build ahead of need, one per event-loop turn (see prepare)
        self._busy = False  # an answer or a load runs: no building (see set_busy)
        self._builder = QTimer(self, interval=0, timeout=self._build_one)
        self.outcome = OutcomePanel(colors)
        self.row.addWidget(self.outcome)
        self.row.addStretch(1)
        self._render()

    def prepare(self, count: int) -> None:
        """Build position panels for up to `count` drafted tokens before the first round needs them, one per
        event-loop turn. A panel is two pyqtgraph plots (~80 ms of GUI thread); building eight inside the
        first round's render froze the window for 0.7 s."""
        self._wanted = max(self._wanted, count)
        if len(self.positions) < self._wanted and not self._busy:
            self._builder.start()

    def set_busy(self, busy: bool) -> None:
        """Build panels only while the window waits for the user. Built during an answer, each panel's ~80 ms
        of GUI thread ran beside the worker's timed target-only steps: on two cores they read 30 ms instead of
        6, and the measured speedup read 6x where it was 1x. A round that needs a panel builds it anyway."""
        self._busy = busy
        if busy:
            self._builder.stop()
        else:
            self.prepare(0)

    def _build_one(self) -> None:
        if len(self.positions) >= self._wanted:
            self._builder.stop()
            return
        self._add_panel().setVisible(False)

    def _add_panel(self) -> PositionPanel:
        panel = PositionPanel(self.colors)
        self.row.insertWidget(len(self.positions), panel)
        self.positions.append(panel)
        return panel

    # --- feeding ------------------------------------------------------------------------------
    def set_decoder(self, decode: Callable[[int], str] | None) -> None:
        self.decoder = decode
        self._render()

    def decode(self, token_id: int) -> str:
        if token_id in self.texts:
            return self.texts[token_id]
        if self.decoder is not None:
            try:
                return self.decoder(token_id)
            except Exception:  # a tokenizer that cannot decode an id must not break the view
                pass
        return f"#{token_id}"

    def clear(self) -> None:
        self.rounds.clear()
        self.index = -1
        self.follow = not self.pause_button.isChecked()
        self._render()

    def add_events(self, events) -> None:
        new = False
        for e in events:
            if isinstance(e, TokenEvent) and e.text and e.token_id not in self.texts and self.decoder is None:
                self.texts[e.token_id] = e.text
            elif isinstance(e, RoundEvent):
                self.rounds.append(e)
                new = True
        if new:
            if self.follow or self.index < 0:
                self.index = len(self.rounds) - 1
            self._render()

    def set_live(self, live: bool) -> None:
        self.live = live  # a pause outlives the answer: the next one then starts held before its first round
        self._render()

    # --- navigation ---------------------------------------------------------------------------
    def set_paused(self, paused: bool) -> None:
        if self.pause_button.isChecked() != paused:
            self.pause_button.setChecked(paused)  # re-enters through toggled
            return
        self.pause_button.setText(self.tr("Resume") if paused else self.tr("Pause"))
        self.follow = not paused
        if not paused:
            self.index = len(self.rounds) - 1
        self.pause_changed.emit(paused)
        self._render()

    def step(self, delta: int) -> None:
        if delta > 0 and self.index >= len(self.rounds) - 1:
            if self.live and self.pause_button.isChecked():
                self.follow = True  # the requested round shows as soon as it arrives
                self.step_requested.emit()
            return
        if not self.rounds:
            return
        self.follow = False
        self.show_round(self.index + delta)

    def show_round(self, index: int) -> None:
        if self.rounds:
            self.index = max(0, min(len(self.rounds) - 1, index))
            self.follow = self.follow and self.index == len(self.rounds) - 1
        self._render()

    def show_latest(self) -> None:
        self.follow = True
        self.show_round(len(self.rounds) - 1)

    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key == Qt.Key.Key_Right:
            self.step(1)
        elif key == Qt.Key.Key_Left:
            self.step(-1)
        elif key == Qt.Key.Key_Space:
            self.pause_button.toggle()
        elif key == Qt.Key.Key_End:
            self.show_latest()
        elif key == Qt.Key.Key_Home:
            self.show_round(0)
        else:
            super().keyPressEvent(event)

    def set_colors(self, colors: Colors) -> None:
        self.colors = colors
        for panel in self.positions:
            panel.set_colors(colors)
        self.outcome.set_colors(colors)
        self._render()

    # --- drawing ------------------------------------------------------------------------------
    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.redraw_if_stale()

    def redraw_if_stale(self) -> None:
        """Draw what arrived while hidden; the window calls it when the dock's tab is raised."""
        if self._stale:
            self._render(force=True)

    def _render(self, force: bool = False) -> None:
        # Behind another tab a dock stays "visible" with nothing on screen: skip drawing until it shows
        # (eight panels cost ~120 ms of GUI thread a round).
        if not force and (not self.isVisible() or self.visibleRegion().isEmpty()):
            self._stale = True
            return
        self._stale = False
        self.prev_button.setEnabled(self.index > 0)
        at_end = self.index >= len(self.rounds) - 1
        self.next_button.setEnabled(not at_end or (self.live and self.pause_button.isChecked()))
        if self.index < 0:
            self.header.setText(self.tr("No rounds yet: send a message (or replay a recording), then pause "
                                        "and step with ← and →."))
            self._show_nothing()
            return
        r = self.rounds[self.index]
        if len(r.u) == 0 and r.drafted and not r.top_p:
            self.header.setText(self.tr("Round {0} of {1}: this round was stored without its acceptance test "
                                        "(reopened from history).").format(self.index + 1, len(self.rounds)))
            self._show_nothing()
            return
        self._header(r)
        while len(self.positions) < r.drafted:
            self._add_panel()
        self.tree.show_round(r, self.decode)  # hidden for a chain
        for i, panel in enumerate(self.positions):
            panel.setVisible(i < r.drafted)
            if i < r.drafted:
                u = r.u[i] if i < len(r.u) else None
                panel.show_position(i, r.drafts[i], r.top_p[i], r.top_q[i], r.p_x[i], r.q_x[i],
                                    r.accept_prob[i], u, self.decode)
        kind = "corrected" if r.accepted < r.drafted else ("bonus" if r.drafted else "target")
        top = r.next_top if kind == "corrected" else (r.top_p[r.drafted] if r.top_p else r.next_top)
        self.outcome.setVisible(True)
        self.outcome.show_outcome(kind, r.accepted, r.next_token, top, r.emitted > r.accepted, self.decode)
        self._arrange()

    def _show_nothing(self) -> None:
        self.drafts.setText("")
        for panel in (*self.positions, self.outcome, self.tree):
            panel.setVisible(False)
        self._split_for = None

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        """A tree round's tree beside its cards where the width holds both, else above them: the cards take
        the size they need to show whole (a tree above them at its full height once left them 68 px of 431),
        the tree the rest. Sized again only when the split or what the cards need changes, so a dragged
        split holds while stepping through alike rounds."""
        if self.tree.isHidden():
            self._split_for = None
            return
        frame = 2 * self.cards.frameWidth()
        cards = self.row_widget.minimumSizeHint() + QSize(frame, frame)  # this round's cards, whole
        handle = self.split.handleWidth()
        room = self.split.width() - handle - cards.width()
        beside = room >= TREE_MIN_WIDTH
        self.tree.set_beside(beside)
        orientation = Qt.Orientation.Horizontal if beside else Qt.Orientation.Vertical
        self.split.setOrientation(orientation)
        key = (orientation, self.split.size(), cards)
        if self._split_for == key:
            return
        self._split_for = key
        if beside:
            total = self.split.width() - handle
            tree = min(self.tree.natural_width(), room)
        else:
            total = self.split.height() - handle
            tree = min(self.tree.sizeHint().height(), total - cards.height())  # the split keeps its minimum
        self.split.setSizes([tree, total - tree])

    def _header(self, r: RoundEvent) -> None:
        state = self.tr("paused") if self.pause_button.isChecked() else (
            self.tr("live") if self.live and self.follow else self.tr("stepping"))
        if r.accepted < r.drafted:
            outcome = self.tr("{0} of {1} accepted, rejected at position {2}, then a corrected token").format(
                r.accepted, r.drafted, r.accepted + 1)
        elif r.drafted:
            outcome = self.tr("all {0} accepted, then a bonus token").format(r.drafted)
        else:
            outcome = self.tr("no draft this round")
        self.header.setText(
            self.tr("<b>Round {0} of {1}</b> · γ = {2} · {3} · emitted {4} · <i>{5}</i>").format(
                self.index + 1, len(self.rounds), r.gamma, outcome, r.emitted, state))
        chips = []
        for i, x in enumerate(r.drafts):
            if i < r.accepted:
                style = f"color:{palette.ACCEPTED}"
            elif i == r.accepted:
                style = f"color:{palette.CORRECTED};text-decoration:line-through"
            else:
                style = f"color:{palette.REJECTED}"
            chips.append(f"<span style='{style}'><code>{_escape(short(self.decode(x), 16))}</code></span>")
        if r.next_token is not None:
            color = palette.CORRECTED if r.accepted < r.drafted else palette.BONUS
            chips.append(f"→ <span style='color:{color}'><b><code>{_escape(short(self.decode(r.next_token), 16))}"
                         f"</code></b></span>")
        self.drafts.setText(self.tr("Drafted: {0}").format(" ".join(chips)))
