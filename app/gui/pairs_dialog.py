"""Models → Recommended pairs…: larger targets the embedded model drafts for, with size, expected
memory and one click to download (with progress, through the loader) and use them; below them, GGUF pairs
for CPUs with their download, memory and the speedup this machine measured or predicts, downloaded here
(with progress, cancellable) and then loaded like any pair."""

from __future__ import annotations

import threading

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from app.drafting.recommended import (
    GGUF_PAIRS,
    PAIRS,
    GgufPair,
    Speedup,
    availability,
    fetch_gguf,
    gguf_files,
    speedup_here,
)
from app.errors import LoadCancelled

COLUMNS = 6
GGUF_COLUMNS = 6


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def speedup_text(s: Speedup) -> str:
    """"measured 1.6× here" for a pair timed on this machine, else "predicted 1.4× here (not measured yet)"."""
    if s.measured:
        return QCoreApplication.translate("PairsDialog", "measured {0:.2f}× here (γ {1})").format(s.value, s.gamma)
    return QCoreApplication.translate("PairsDialog", "predicted {0:.2f}× here (not measured yet)").format(s.value)


class PairsDialog(QDialog):
    chosen = Signal(str, str)  # target spec, draft spec
    _progress = Signal(str, int, int)  # from the download thread: what, bytes done, bytes total
    _fetched = Signal(object, object)  # (target path, draft spec) or (None, the error)

    def __init__(self, device, pairs=PAIRS, parent=None, *, gguf_pairs=GGUF_PAIRS, fetch=fetch_gguf,
                 located=gguf_files, speedup=speedup_here) -> None:
        """device: where the hub pairs would load (their memory is shown for it); pairs: hub pairs;
        gguf_pairs: the GGUF pairs for CPUs, `located(pair)` their files when on disk, `fetch(pair, progress,
        cancelled)` downloads them (in a thread), `speedup(pair)` what this machine measured or predicts."""
        super().__init__(parent)
        self.setWindowTitle(self.tr("Recommended pairs"))
        self.pairs = list(pairs)
        layout = QVBoxLayout(self)
        intro = QLabel(self.tr(
            "<b>SmolLM2 targets from the hub</b> (safetensors): these share the embedded SmolLM2-135M's "
            "tokenizer, so it drafts for them. Larger targets "
            "gain more: a draft step costs a smaller share of a target step. Whether drafting pays on this "
            "machine, and the draft length, are then measured and shown in the status bar."), wordWrap=True)
        layout.addWidget(intro)
        self.table = QTableWidget(len(self.pairs), COLUMNS)
        self.table.setHorizontalHeaderLabels([
            self.tr("Target"), self.tr("Parameters"), self.tr("Download"),
            self.tr("Memory on {0}").format(device.type.upper()), self.tr("Status"), ""])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.buttons: list[QPushButton] = []
        states = {"downloaded": self.tr("downloaded"), "download": self.tr("not downloaded"),
                  "offline": self.tr("offline: not in the local cache")}
        for row, pair in enumerate(self.pairs):
            state = availability(pair)
            cells = [pair.name, f"{pair.parameters / 1e6:,.0f} M", _size(pair.download_bytes),
                     _size(pair.memory_bytes(device)), states[state]]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(pair.note or pair.target)
                self.table.setItem(row, col, item)
            label = {"downloaded": self.tr("Use"), "download": self.tr("Download and use"),
                     "offline": self.tr("Offline")}[state]
            button = QPushButton(label, enabled=state != "offline")
            if state == "offline":
                button.setToolTip(self.tr("The hub is off (HF_HUB_OFFLINE=1) and {0} is not in the local Hugging "
                                          "Face cache; download it once while online.").format(pair.target))
            button.clicked.connect(lambda _=False, p=pair: self._use(p))
            self.table.setCellWidget(row, COLUMNS - 1, button)
            self.buttons.append(button)
        _fit(self.table)
        layout.addWidget(self.table)
        layout.addSpacing(8)
        self._gguf(layout, list(gguf_pairs), located, speedup)
        self.fetch = fetch
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress.connect(self._show_progress)
        self._fetched.connect(self._downloaded)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout.addStretch(1)
        layout.addWidget(close)
        self.setMinimumWidth(max(self.table.minimumWidth(), self.gguf_table.minimumWidth()) + 24)
        self.adjustSize()

    def _gguf(self, layout: QVBoxLayout, pairs: list[GgufPair], located, speedup) -> None:
        """The GGUF pairs' table, with the download's progress bar and Cancel under it (hidden until used)."""
        layout.addWidget(QLabel(self.tr(
            "<b>GGUF pairs for CPUs</b> (Q4_K_M): a CPU reads all the weights at every step, so a draft costs "
            "about its share of the target's bytes. The speedup is measured once the pair has run here; until "
            "then it is a prediction from those bytes, this machine's verify costs and an assumed acceptance "
            "(hover it for what it rests on)."), wordWrap=True))
        self.gguf_pairs = pairs
        self.gguf_table = table = QTableWidget(len(pairs), GGUF_COLUMNS)
        table.setHorizontalHeaderLabels([self.tr("Target and draft"), self.tr("Download"),
                                         self.tr("Memory on CPU"), self.tr("Speedup here"), self.tr("Status"), ""])
        table.verticalHeader().setVisible(False)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.gguf_buttons: list[QPushButton] = []
        self.speedups: list[Speedup] = []
        cpu = torch_cpu()
        for row, pair in enumerate(pairs):
            files = located(pair)
            s = speedup(pair)
            self.speedups.append(s)
            cells = [self.tr("{0}\ndrafted by {1}").format(pair.name, pair.draft_name), f"{pair.download_bytes / 1e9:.2f} GB",
                     _size(pair.memory_bytes(cpu)), speedup_text(s),
                     self.tr("downloaded") if files else self.tr("not downloaded")]
            tips = [pair.note, "", self.tr("target and draft as loading plans them (dequantised from the GGUF)"),
                    s.basis, ""]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(tips[col] or pair.note)
                table.setItem(row, col, item)
            button = QPushButton(self.tr("Use this pair") if files else self.tr("Download and use"))
            button.clicked.connect(lambda _=False, p=pair, r=row: self._get(p, r))
            table.setCellWidget(row, GGUF_COLUMNS - 1, button)
            self.gguf_buttons.append(button)
        _fit(table)
        layout.addWidget(table)
        row_layout = QHBoxLayout()
        self.download_bar = QProgressBar(visible=False)
        self.cancel_button = QPushButton(self.tr("Cancel download"), visible=False)
        self.cancel_button.clicked.connect(self.cancel_download)
        self.download_note = QLabel(wordWrap=True)
        for w in (self.download_bar, self.cancel_button):  # room kept: showing them does not squeeze the tables
            policy = w.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            w.setSizePolicy(policy)
        row_layout.addWidget(self.download_bar, 1)
        row_layout.addWidget(self.cancel_button)
        layout.addLayout(row_layout)
        layout.addWidget(self.download_note)
        self._located = located

    def _get(self, pair: GgufPair, row: int) -> None:
        """On disk: load it. Else download it in a thread (progress shown, cancellable), then load it."""
        files = self._located(pair)
        if files is not None:
            self._load(*files)
            return
        for b in self.gguf_buttons:
            b.setEnabled(False)
        self._cancel.clear()
        self.download_bar.setRange(0, 1000)
        self.download_bar.setValue(0)
        self.download_bar.setVisible(True)
        self.cancel_button.setVisible(True)
        self.download_note.setText(self.tr("Downloading {0} ({1:.2f} GB) …").format(pair.name, pair.download_bytes / 1e9))

        def run() -> None:
            try:
                target, draft = self.fetch(pair, self._progress.emit, self._cancel.is_set)
            except Exception as exc:  # shown in one line; the partial file is gone
                self._fetched.emit(None, exc)
            else:
                self._fetched.emit(target, draft)

        self._thread = threading.Thread(target=run, name="pair-download", daemon=True)
        self._thread.start()

    def _show_progress(self, what: str, done: int, total: int) -> None:
        self.download_bar.setValue(int(1000 * done / total) if total else 0)
        self.download_bar.setFormat(f"{what}: {done / 1e9:.2f} / {total / 1e9:.2f} GB")

    def cancel_download(self) -> None:
        self._cancel.set()
        self.download_note.setText(self.tr("Cancelling …"))

    def _downloaded(self, target, draft) -> None:
        self._thread = None
        self.download_bar.setVisible(False)
        self.cancel_button.setVisible(False)
        for b in self.gguf_buttons:
            b.setEnabled(True)
        if target is None:
            self.download_note.setText(self.tr("Cancelled: nothing was loaded.") if isinstance(draft, LoadCancelled)
                                       else self.tr("The download failed: {0}").format(draft))
            return
        self._load(target, draft)

    def _load(self, target, draft: str) -> None:
        self.chosen.emit(str(target), draft)
        self.accept()

    def reject(self) -> None:
        """Closing the dialog cancels a download under way."""
        self._cancel.set()
        super().reject()

    def _use(self, pair) -> None:
        self.chosen.emit(pair.target, pair.draft)
        self.accept()


def _fit(table: QTableWidget) -> None:
    """The table as large as its rows and columns: no scroll bars, no empty space under the rows."""
    table.resizeColumnsToContents()
    table.resizeRowsToContents()
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    frame = 2 * table.frameWidth()
    table.setFixedHeight(table.horizontalHeader().height() + sum(table.rowHeight(r) for r in range(table.rowCount()))
                         + frame)
    table.setMinimumWidth(sum(table.columnWidth(c) for c in range(table.columnCount())) + frame)


def torch_cpu():
    import torch

    return torch.device("cpu")
