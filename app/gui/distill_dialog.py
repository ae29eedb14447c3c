"""Models → Train a draft…: `speclens distill` for the loaded target, run by a worker in the engine
thread (so it never overlaps generation or loading), with progress, ETA and cancel. The worker only
turns DistillProgress into signals; the dialog only renders them."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
)

PHASES = ("load", "data", "train", "eval", "save", "done")


class DistillWorker(QObject):
    """Lives in the engine thread. start(request) runs run_distill to the end or to a cancel."""

    progress = Signal(object)  # DistillProgress
    done = Signal(object)  # the report dict
    failed = Signal(str)  # one line

    @Slot(object)
    def start(self, request) -> None:
        config, target, cancel = request
        from app.distill import run_distill
        from app.errors import ModelError

        try:
            report = run_distill(config, progress=self.progress.emit, cancel=cancel, target=target)
        except (ValueError, ModelError) as exc:
            self.failed.emit(str(exc).splitlines()[0])
            return
        except Exception as exc:  # training must never take the app down
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
            return
        self.done.emit(report)


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return ""
    m, s = divmod(int(seconds), 60)
    return f" · ETA {m}:{s:02d}"


class DistillDialog(QDialog):
    """Options, then progress; emits `use_draft(path)` when the user picks the result."""

    run_requested = Signal(object)  # (DistillConfig, LoadedModel, threading.Event)
    use_draft = Signal(str)

    def __init__(self, target, parent=None) -> None:
        super().__init__(parent)
        self.target = target
        self.cancel = threading.Event()
        self.report: dict | None = None
        self.running = False
        self.setWindowTitle(self.tr("Train a draft for {0}").format(target.name))
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(self.tr(
            "Trains a small feature draft (one decoder layer reading the target's own features) from the "
            "target's answers to a broad set of prompts, then measures its acceptance on held-out prompts. "
            "The app stays usable for reading; sending waits until training ends."), wordWrap=True))
        form = QFormLayout()
        self.minutes = QDoubleSpinBox(minimum=0.5, maximum=600.0, value=15.0, decimals=1, suffix=" min")
        self.vocab = QSpinBox(minimum=256, maximum=262144, value=8192, singleStep=1024)
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=0)
        self.prompts = QLineEdit(placeholderText=self.tr("optional: your own prompts, one a line"))
        self.text_dir = QLineEdit(placeholderText=self.tr("optional: a folder of text files"))
        browse_prompts = QPushButton(self.tr("Browse…"))
        browse_prompts.clicked.connect(self._browse_prompts)
        browse_text = QPushButton(self.tr("Browse…"))
        browse_text.clicked.connect(self._browse_text)
        for label, widget, button in ((self.tr("Budget (data included)"), self.minutes, None),
                                      (self.tr("Head rows (vocabulary subset)"), self.vocab, None),
                                      (self.tr("Seed"), self.seed, None),
                                      (self.tr("Prompts file"), self.prompts, browse_prompts),
                                      (self.tr("Text folder"), self.text_dir, browse_text)):
            if button is None:
                form.addRow(label, widget)
            else:
                row = QHBoxLayout()
                row.addWidget(widget, 1)
                row.addWidget(button)
                form.addRow(label, row)
        layout.addLayout(form)
        self.phase = QLabel(self.tr("Not started"))
        self.bar = QProgressBar(maximum=1000)
        self.outcome = QLabel(wordWrap=True)
        layout.addWidget(self.phase)
        layout.addWidget(self.bar)
        layout.addWidget(self.outcome)
        buttons = QHBoxLayout()
        self.start_button = QPushButton(self.tr("Train"), objectName="primary")
        self.cancel_button = QPushButton(self.tr("Cancel training"), enabled=False)
        self.use_button = QPushButton(self.tr("Use this draft"), enabled=False)
        self.close_button = QPushButton(self.tr("Close"))
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.stop)
        self.use_button.clicked.connect(self._use)
        self.close_button.clicked.connect(self.close)
        for b in (self.start_button, self.cancel_button, self.use_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        layout.addLayout(buttons)
        self.resize(560, 360)

    def config(self):
        from app.distill import DistillConfig

        return DistillConfig(
            target=self.target.spec, minutes=self.minutes.value(), vocab_k=self.vocab.value(), seed=self.seed.value(),
            prompts_file=self.prompts.text().strip() or None, text_dir=self.text_dir.text().strip() or None,
            command=f"GUI: Models → Train a draft (target {self.target.spec}, {self.minutes.value():g} min, "
                    f"vocab {self.vocab.value()}, seed {self.seed.value()})",
        )

    def start(self) -> None:
        self.cancel = threading.Event()
        self.running = True
        self.report = None
        self.start_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.use_button.setEnabled(False)
        self.outcome.setText("")
        self.phase.setText(self.tr("Waiting for the engine …"))
        self.run_requested.emit((self.config(), self.target, self.cancel))

    def stop(self) -> None:
        self.cancel.set()
        self.cancel_button.setEnabled(False)
        self.phase.setText(self.tr("Stopping: the best checkpoint so far is kept …"))

    def on_progress(self, p) -> None:
        step = PHASES.index(p.phase) if p.phase in PHASES else 0
        overall = (step + max(0.0, min(1.0, p.fraction))) / (len(PHASES) - 1)
        self.bar.setValue(int(1000 * min(1.0, overall)))
        self.phase.setText(f"{p.phase}: {p.message}{_eta(p.eta_s)}")

    def on_done(self, report: dict) -> None:
        self.running = False
        self.report = report
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        s = report.get("summary") or {}
        path = report.get("out")
        self.bar.setValue(1000)
        if path and (s.get("alpha_greedy") is not None or not report.get("cancelled")):
            fmt = lambda x: "?" if x is None else f"{x:.2f}"  # noqa: E731
            state = self.tr("Stopped early; the best checkpoint was kept.") if report.get("cancelled") else \
                self.tr("Done.")
            self.outcome.setText(self.tr("{0} α {1} (greedy), {2} (T = 0.7), c {3}. Saved in {4}").format(
                state, fmt(s.get("alpha_greedy")), fmt(s.get("alpha_sampled")), fmt(s.get("c")), path))
            self.use_button.setEnabled(True)
        else:
            self.outcome.setText(self.tr("Cancelled before a checkpoint was written; nothing was saved."))
        self.phase.setText(self.tr("Finished"))

    def on_failed(self, message: str) -> None:
        self.running = False
        self.start_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.phase.setText(self.tr("Failed"))
        self.outcome.setText(message)

    def _use(self) -> None:
        if self.report and self.report.get("out"):
            self.use_draft.emit(str(self.report["out"]))
            self.accept()

    def _browse_prompts(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Prompts file"), "", "Text (*.txt);;All files (*)")
        if path:
            self.prompts.setText(path)

    def _browse_text(self) -> None:
        path = QFileDialog.getExistingDirectory(self, self.tr("Text folder"))
        if path:
            self.text_dir.setText(path)

    def closeEvent(self, event) -> None:
        if self.running:  # closing the dialog stops training; the best checkpoint is kept
            self.stop()
        super().closeEvent(event)
