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


class Presentation:
    """Handed the window whose layout it changes and restores (its docks, bars, fonts, theme and the chat
    column's widgets: the layout is the window's own), the live statistics its readout shows, `describe()`
    (SpeculationOffer.describe: what the audience watches), the playback bar and the race view."""

    def __init__(self, window, stats: LiveStats, describe, playback, race_view) -> None:
        self.window, self.playback, self.race_view = window, playback, race_view
        self.on = False
        self._saved: dict | None = None
        self.readout = Readout(stats)
        self.readout.set_sizes(44, 18)
        self.readout.describe = describe
        keys = (
            ("F2", self.toggle_controls),
            ("Space", playback.toggle),
            ("Right", playback.step),
        )
        self._keys = [QShortcut(QKeySequence(key), window, slot, enabled=False) for key, slot in keys]

    def toggle(self) -> None:
        self.set(not self.on)

    def _presenter_widgets(self) -> list:
        w = self.window
        row = [w.input, w.send_button, w.stop_button]
        return row + ([self.playback] if self.playback.player is not None else [])

    def toggle_controls(self) -> None:
        if not self.on:
            return
        w = self.window
        show = not w.input.isVisible()
        for widget in self._presenter_widgets():
            widget.setVisible(show)
        if show:
            w.input.setFocus()

    def set(self, on: bool, full_screen: bool = True) -> None:
        if on == self.on:
            return
        w = self.window
        if on:
            self._saved = {
                "geometry": w.geometry(), "state": w.saveState(), "window_state": w.windowState(),
                "font": w.chat.font().pointSize(), "menu": w.menuBar().isVisible(),
                "status": w.statusBar().isVisible(),
                "visible": {x: x.isVisible() for x in (w.system_prompt, *self._presenter_widgets())},
            }
            self.on = True
            for key in [k for k in w.docks if k != "plots"]:
                # removed, not only hidden: a hidden dock tabified with the plots leaves a tab strip
                w.removeDockWidget(w.docks[key])
            plots = w.docks["plots"]
            plots.setTitleBarWidget(QWidget())  # no title or float/close buttons on stage
            w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, plots)
            plots.setFloating(False)
            plots.show()
            w.resizeDocks([plots], [int(w.width() * 0.42)], Qt.Orientation.Horizontal)
            w.plots.set_presentation(True)
            for widget in (w.system_prompt, *self._presenter_widgets()):
                widget.hide()
            w.menuBar().hide()
            w.statusBar().hide()
            self.readout.show()
            self.readout.refresh()
            self.readout.timer.start()
            w.set_theme(w.theme_name)  # the high-contrast variant
            w.set_font_size(PRESENTATION_PT, remember=False)
            if full_screen:
                w.showFullScreen()
        else:
            saved, self._saved = self._saved, None
            assert saved is not None  # set when the mode went on
            self.on = False
            self.readout.timer.stop()
            self.readout.hide()
            w.plots.set_presentation(False)
            w.docks["plots"].setTitleBarWidget(None)
            w.set_theme(w.theme_name)
            w.set_font_size(saved["font"], remember=False)
            w.setWindowState(saved["window_state"])
            w.setGeometry(saved["geometry"])  # restoreGeometry would clamp it to the screen
            w.restoreState(saved["state"])
            # again once the window has its old size back: dock sizes are stored relative to it
            QTimer.singleShot(0, w, lambda: self.on or w.restoreState(saved["state"]))
            w.menuBar().setVisible(saved["menu"])
            w.statusBar().setVisible(saved["status"])
            for widget, visible in saved["visible"].items():
                widget.setVisible(visible)
        for shortcut in self._keys:
            shortcut.setEnabled(on)
        if self.race_view.isVisible():  # its sizes follow the window's text size (MainWindow.set_font_size)
            self.readout.hide()
            self.race_view.controls.setVisible(not on)

    def snapshot(self) -> dict:
        """What leaving presentation mode must restore (tests compare two of these)."""
        w = self.window
        return {
            "state": bytes(w.saveState()), "geometry": w.geometry().getRect(),
            "window_state": w.windowState(), "font": w.chat.font().pointSize(),
            "legend_font": w.legend.font().pointSize(), "menu": w.menuBar().isVisible(),
            "status": w.statusBar().isVisible(), "theme": w.colors,
            "docks": {k: d.isVisible() for k, d in w.docks.items()},
            "widgets": [x.isVisible() for x in (w.system_prompt, w.input, w.send_button, self.readout)],
            "plots": [p.isVisible() for p in w.plots.plots.values()],
        }
