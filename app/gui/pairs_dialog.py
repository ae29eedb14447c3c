"""Models → Recommended pairs…: larger targets the embedded model drafts for, with size, expected
memory and one click to download (with progress, through the loader) and use them."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

from app.drafting.recommended import PAIRS, availability

COLUMNS = 6


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


class PairsDialog(QDialog):
    chosen = Signal(str, str)  # target spec, draft spec

    def __init__(self, device, pairs=PAIRS, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Recommended pairs"))
        self.pairs = list(pairs)
        layout = QVBoxLayout(self)
        intro = QLabel(self.tr(
            "These targets share the embedded SmolLM2-135M's tokenizer, so it drafts for them. Larger targets "
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
        layout.addWidget(self.table)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout.addWidget(close)
        self.resize(820, 240)

    def _use(self, pair) -> None:
        self.chosen.emit(pair.target, pair.draft)
        self.accept()
