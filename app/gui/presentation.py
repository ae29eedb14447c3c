"""Presentation mode (View → Presentation, F5; Esc leaves): full screen, chat and legend at 28 pt
in a high-contrast theme, a large live readout of measured speedup, tokens/s, α and tokens per
round (with the tree's nodes when the rounds verified trees), and only the acceptance histogram and
the measured-vs-predicted speedup plot. The input row and the playback
bar hide behind F2. Leaving restores the exact layout: geometry, dock state, fonts, bars."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QSizePolicy, QWidget

from app.engine.stats import RoundShape, round_shape

from .live_stats import LiveStats

PRESENTATION_PT = 28  # readable from the back of a room on a 1920×1080 projector
READOUT_MS = 250


def per_round_caption(shape: RoundShape | None) -> str:
    """Tokens per round, with the tree's nodes when the answer's rounds verified trees: a talk shows a
    tree's longer rounds for its wider verify pass."""
    if shape is None or shape.tree_nodes is None:
        return QCoreApplication.translate("Presentation", "tokens / round")
    return QCoreApplication.translate("Presentation", "tokens / round · tree of {0:.0f} nodes").format(shape.tree_nodes)


class Readout(QFrame):
    """Four large numbers under their captions, refreshed from the live statistics: speedup, tokens/s,
    α, and tokens per round (with the tree's nodes when the rounds were trees)."""

    def __init__(self, stats: LiveStats, parent=None) -> None:
        super().__init__(parent, objectName="readout", visible=False)
        self.stats = stats
        grid = QGridLayout(self)
        grid.setContentsMargins(8, 4, 8, 4)
        self.values: dict[str, QLabel] = {}
        self.captions: dict[str, QLabel] = {}
        captions = {"speedup": QCoreApplication.translate("Presentation", "measured speedup"), "tps": QCoreApplication.translate("Presentation", "tokens / s"), "alpha": QCoreApplication.translate("Presentation", "acceptance α"),
                    "per_round": per_round_caption(None)}
        for col, (key, caption) in enumerate(captions.items()):
            value = QLabel("–", objectName="readout_value", alignment=Qt.AlignmentFlag.AlignCenter)
            label = QLabel(caption, objectName="readout_caption", alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
            for w in (value, label):  # four columns at 44 pt must not widen the window (its layout is restored)
                w.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            grid.addWidget(value, 0, col)
            grid.addWidget(label, 1, col)
            self.values[key] = value
            self.captions[key] = label
        # which of the two the audience watches: target-only, or which drafter at what speed
        self.mode = QLabel(objectName="readout_mode", alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        grid.addWidget(self.mode, 2, 0, 1, len(captions))
        self.describe = lambda: ""  # the window's SpeculationOffer.describe
        self.timer = QTimer(self, interval=READOUT_MS, timeout=self.refresh)

    def set_sizes(self, value_pt: int, caption_pt: int) -> None:
        self.setStyleSheet(f"QLabel#readout_value {{ font-size: {value_pt}pt; font-weight: 700; }}"
                           f"QLabel#readout_caption, QLabel#readout_mode {{ font-size: {caption_pt}pt; }}")

    def refresh(self) -> None:
        st = self.stats
        _, speedup = st.speedup_series()
        tps = st.tokens_per_second()
        alpha = st.session.alpha
        self.values["speedup"].setText(f"{speedup[-1]:.2f}×" if speedup else "–")
        self.values["tps"].setText(f"{tps:.1f}" if tps else "–")
        self.values["alpha"].setText(f"{alpha:.2f}" if alpha is not None else "–")
        shape = round_shape(st.message.rounds)
        self.values["per_round"].setText(f"{shape.tokens_per_round:.2f}" if shape else "–")
        self.captions["per_round"].setText(per_round_caption(shape))
        self.mode.setText(self.describe())


class PresentationMixin:
    def _init_presentation(self) -> None:
        self.presenting = False
        self._saved: dict | None = None
        self.readout = Readout(self.stats)
        self.readout.set_sizes(44, 18)
        self.readout.describe = self.offer.describe
        self.centralWidget().layout().insertWidget(0, self.readout)
        keys = (
            ("F2", self.toggle_presenter_controls),
            ("Space", lambda: self.playback.toggle()),
            ("Right", lambda: self.playback.step()),
        )
        self._presentation_keys = []
        for key, slot in keys:
            shortcut = QShortcut(QKeySequence(key), self, slot, enabled=False)
            self._presentation_keys.append(shortcut)

    def toggle_presentation(self) -> None:
        self.set_presentation(not self.presenting)

    def escape(self) -> None:
        """Esc: leaves presentation mode, else stops the answer (or cancels an edit)."""
        if self.presenting:
            self.set_presentation(False)
        else:
            self.stop()

    def _presenter_widgets(self) -> list:
        row = [self.input, self.send_button, self.stop_button]
        return row + ([self.playback] if self.player is not None else [])

    def toggle_presenter_controls(self) -> None:
        if not self.presenting:
            return
        show = not self.input.isVisible()
        for w in self._presenter_widgets():
            w.setVisible(show)
        if show:
            self.input.setFocus()

    def set_presentation(self, on: bool, full_screen: bool = True) -> None:
        if on == self.presenting:
            return
        if on:
            self._saved = {
                "geometry": self.geometry(), "state": self.saveState(), "window_state": self.windowState(),
                "font": self.chat.font().pointSize(), "menu": self.menuBar().isVisible(),
                "status": self.statusBar().isVisible(),
                "visible": {w: w.isVisible() for w in (self.system_prompt, *self._presenter_widgets())},
            }
            self.presenting = True
            for key in [k for k in self.docks if k != "plots"]:
                # removed, not only hidden: a hidden dock tabified with the plots leaves a tab strip
                self.removeDockWidget(self.docks[key])
            plots = self.docks["plots"]
            plots.setTitleBarWidget(QWidget())  # no title or float/close buttons on stage
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, plots)
            plots.setFloating(False)
            plots.show()
            self.resizeDocks([plots], [int(self.width() * 0.42)], Qt.Orientation.Horizontal)
            self.plots.set_presentation(True)
            for w in (self.system_prompt, *self._presenter_widgets()):
                w.hide()
            self.menuBar().hide()
            self.statusBar().hide()
            self.readout.show()
            self.readout.refresh()
            self.readout.timer.start()
            self.set_theme(self.theme_name)  # the high-contrast variant
            self.set_font_size(PRESENTATION_PT, remember=False)
            if full_screen:
                self.showFullScreen()
        else:
            saved, self._saved = self._saved, None
            self.presenting = False
            self.readout.timer.stop()
            self.readout.hide()
            self.plots.set_presentation(False)
            self.docks["plots"].setTitleBarWidget(None)
            self.set_theme(self.theme_name)
            self.set_font_size(saved["font"], remember=False)
            self.setWindowState(saved["window_state"])
            self.setGeometry(saved["geometry"])  # restoreGeometry would clamp it to the screen
            self.restoreState(saved["state"])
            # again once the window has its old size back: dock sizes are stored relative to it
            QTimer.singleShot(0, self, lambda: self.presenting or self.restoreState(saved["state"]))
            self.menuBar().setVisible(saved["menu"])
            self.statusBar().setVisible(saved["status"])
            for w, visible in saved["visible"].items():
                w.setVisible(visible)
        for shortcut in self._presentation_keys:
            shortcut.setEnabled(on)
        if self.race_view.isVisible():
            self.readout.hide()
            self.race_view.set_sizes(self.chat.font().pointSize())
            self.race_view.controls.setVisible(not on)

    def layout_snapshot(self) -> dict:
        """What leaving presentation mode must restore (tests compare two of these)."""
        return {
            "state": bytes(self.saveState()), "geometry": self.geometry().getRect(),
            "window_state": self.windowState(), "font": self.chat.font().pointSize(),
            "legend_font": self.legend.font().pointSize(), "menu": self.menuBar().isVisible(),
            "status": self.statusBar().isVisible(), "theme": self.colors,
            "docks": {k: d.isVisible() for k, d in self.docks.items()},
            "widgets": [w.isVisible() for w in (self.system_prompt, self.input, self.send_button, self.readout)],
            "plots": [p.isVisible() for p in self.plots.plots.values()],
        }
