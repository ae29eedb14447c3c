"""What the window says, in one place the flows are handed: the banner over the chat (a problem, or a
note), the progress and the current activity in the status bar, a passing message there, and the
permanent labels that follow the loaded pair (device, models, the drafter choice) and the live speed."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel, QProgressBar, QStatusBar

from .answer_header import draft_name
from .choice_text import choice_status, switch_text
from .live_stats import LiveStats


class WindowStatus(QObject):
    """Owns its widgets (the window places the banner): `banner`, and in `bar` (the window's status bar, or its
    own) `progress`, `progress_label` and `labels`. Follows the chat model's pair_changed; refresh() after new
    rounds."""

    def __init__(self, model, stats: LiveStats, gamma_auto: Callable[[], bool], bar: QStatusBar | None = None,
                 parent=None) -> None:
        super().__init__(parent)
        self.model, self.stats, self.gamma_auto = model, stats, gamma_auto
        self.banner = QLabel(wordWrap=True, objectName="banner", visible=False)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bar = bar if bar is not None else QStatusBar()
        self.progress_label = QLabel()
        self.progress = QProgressBar(maximum=0, fixedWidth=140, visible=False)
        self.bar.addWidget(self.progress)
        self.bar.addWidget(self.progress_label)
        self.labels = {key: QLabel() for key in ("choice", "device", "models", "speed", "alpha")}
        self.labels["choice"].setObjectName("choice")
        for label in self.labels.values():
            self.bar.addPermanentWidget(label)
        model.pair_changed.connect(self.refresh)

    # --- messages --------------------------------------------------------------------------------
    def show_banner(self, text: str, info: bool = False) -> None:
        self.banner.setObjectName("info" if info else "banner")
        self.banner.setStyleSheet("")  # re-polish for the new object name
        self.banner.setText(text)
        self.banner.setVisible(True)

    def hide_banner(self) -> None:
        self.banner.setVisible(False)

    def say(self, text: str) -> None:
        """What the window is doing now (loading, generating, done …), left in the status bar."""
        self.progress_label.setText(text)

    def flash(self, text: str, ms: int) -> None:
        """A passing message in the status bar."""
        self.bar.showMessage(text, ms)

    def busy(self, text: str) -> None:
        """Work of unknown length starts: a busy bar until progress() reports a fraction."""
        self.progress.setMaximum(0)
        self.progress.setVisible(True)
        self.say(text)

    def progress_to(self, done: int, total: int, text: str) -> None:
        self.progress.setMaximum(total)
        self.progress.setValue(done)
        self.say(text)

    def done(self, text: str) -> None:
        """The work ended: the bar goes, the text stays."""
        self.progress.setVisible(False)
        self.say(text)

    # --- the permanent labels --------------------------------------------------------------------
    def refresh(self) -> None:
        labels, model = self.labels, self.model
        if model.target is not None:
            chosen = model.target.threads
            threads = self.tr(" · threads: {0}").format(chosen.threads) if chosen is not None else ""
            labels["device"].setText(f"{model.target.device.type.upper()} · {model.target.kernels}{threads}")
            timed = ", ".join(f"{n}: {ms:.1f} ms" for n, ms in chosen.timings.items()) if chosen is not None else ""
            labels["device"].setToolTip(
                self.tr("CPU threads chosen by timing one decode step at load: {0}").format(timed) if timed
                else self.tr("CPU threads as set (OMP_NUM_THREADS, --threads or one core)") if threads else "")
            labels["models"].setText(f"{model.target.name} ← {draft_name(model.drafter)}")
        tps = self.stats.tokens_per_second()
        labels["speed"].setText(f"{tps:.1f} tok/s" if tps else "– tok/s")
        alpha = self.stats.session.alpha
        labels["alpha"].setText(f"α {alpha:.3f}" if alpha is not None else "α –")
        switched = switch_text(model.switched) if model.switched is not None else None
        text, why = choice_status(model.selection, model.auto, self.gamma_auto(), self.stats, switched)
        labels["choice"].setText(text)
        labels["choice"].setToolTip(why)
