"""Live decoding controls and the model pickers. The decode parameters are kept as one frozen
DecodeParams, replaced on every change, so the engine thread reads a consistent snapshot each round; γ on
auto is the live controller's, which the answer (app/session/answer_loop.py) reads, not this widget."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.drafting.catalog import DRAFTER, list_catalog
from app.drafting.registry import AUTO, NO_DRAFT
from app.engine.params import GAMMA_LIMIT, DecodeParams
from app.session.chat_params import CHAT_PARAMS

from .settings import AUTO_GAMMA

BROWSE_DIR = "Browse folder…"
BROWSE_GGUF = "Browse .gguf file…"
TRAINED_ROLE = Qt.ItemDataRole.UserRole + 1  # marks the trained-draft entries of the draft picker


class ControlsPanel(QWidget):
    target_chosen = Signal(str)
    draft_chosen = Signal(str)
    show_rejected_changed = Signal(bool)
    compile_changed = Signal(bool)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._params = CHAT_PARAMS
        self._gamma_auto = True
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)

        models = QGroupBox(self.tr("Models"))
        form = QFormLayout(models)
        self.target = QComboBox()
        self.draft = QComboBox()
        self._fill_pickers()
        self.target.activated.connect(lambda i: self._picked(self.target, i, self.target_chosen))
        self.draft.activated.connect(lambda i: self._picked(self.draft, i, self.draft_chosen))
        form.addRow(self.tr("Target"), self.target)
        form.addRow(self.tr("Draft"), self.draft)
        layout.addWidget(models)

        sampling = QGroupBox(self.tr("Decoding · applies at the next round"))
        form = QFormLayout(sampling)
        self.gamma = QSpinBox(minimum=AUTO_GAMMA, maximum=GAMMA_LIMIT, value=AUTO_GAMMA)
        self.gamma.setSpecialValueText(self.tr("auto"))
        self.gamma.setToolTip(self.tr("draft length γ per round; auto re-chooses it every round from the "
                                      "measured acceptance, draft cost and verify cost"))
        start = CHAT_PARAMS
        self.temperature = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.05, decimals=2,
                                          value=start.temperature, toolTip=self.tr("0 = greedy"))
        self.top_k = QSpinBox(minimum=0, maximum=100000, value=start.top_k, specialValueText=self.tr("off"))
        self.top_p = QDoubleSpinBox(minimum=0.01, maximum=1.0, singleStep=0.05, decimals=2, value=start.top_p)
        self.max_new = QSpinBox(minimum=1, maximum=8192, value=start.max_new_tokens, singleStep=32)
        seed_row = QHBoxLayout()
        self.seed_on = QCheckBox(self.tr("fixed"))
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=0, enabled=False)
        self.seed_on.toggled.connect(self.seed.setEnabled)
        seed_row.addWidget(self.seed_on)
        seed_row.addWidget(self.seed, 1)
        form.addRow(self.tr("γ (draft length)"), self.gamma)
        form.addRow(self.tr("Temperature"), self.temperature)
        form.addRow("Top-k", self.top_k)
        form.addRow("Top-p", self.top_p)
        form.addRow(self.tr("Seed"), seed_row)
        form.addRow(self.tr("Max new tokens"), self.max_new)
        layout.addWidget(sampling)

        view = QGroupBox(self.tr("View"))
        box = QVBoxLayout(view)
        self.show_rejected = QCheckBox(self.tr("Show rejected drafts (struck through)"))
        self.show_rejected.toggled.connect(self.show_rejected_changed)
        box.addWidget(self.show_rejected)
        layout.addWidget(view)

        engine = QGroupBox(self.tr("Engine"))
        box = QVBoxLayout(engine)
        self.compile = QCheckBox(self.tr("Compile decoding steps (static caches, torch.compile)"))
        self.compile.setToolTip(self.tr(
            "Captures the draft and verify steps as CUDA graphs on a GPU. Compiling takes a minute or more "
            "before the next message; the output is the same token for token."))
        self.compile.toggled.connect(self.compile_changed)
        box.addWidget(self.compile)
        layout.addWidget(engine)

        for whole in (self.gamma, self.top_k, self.max_new, self.seed):
            whole.valueChanged.connect(self._update)
        for real in (self.temperature, self.top_p):
            real.valueChanged.connect(self._update)
        self.seed_on.toggled.connect(self._update)

    def params(self) -> DecodeParams:
        """The controls as one snapshot, safe to call from the engine thread; with γ on auto its γ is the
        start value, which an answer replaces with its live controller's."""
        return self._params

    def gamma_is_auto(self) -> bool:
        """γ is on auto (a snapshot, safe to read from the engine thread)."""
        return self._gamma_auto

    def hand_gamma(self) -> int | None:
        """The hand-set γ; None while γ is on auto (the chat model's gamma_max takes that)."""
        return None if self.gamma_is_auto() else self.gamma.value()

    def _update(self, *_):
        gamma = self.gamma.value()
        self._gamma_auto = gamma == AUTO_GAMMA
        self._params = DecodeParams(
            gamma=CHAT_PARAMS.gamma if gamma == AUTO_GAMMA else gamma, temperature=self.temperature.value(), top_k=self.top_k.value(),
            top_p=self.top_p.value(), max_new_tokens=self.max_new.value(),
            seed=self.seed.value() if self.seed_on.isChecked() else None,
        )

    def _fill_pickers(self) -> None:
        """Targets and drafts from the models catalog (embedded, self-drafts, the local hub cache)."""
        self.draft.addItem(self.tr("auto (fastest measured on this machine)"), AUTO)
        for entry in list_catalog():
            if entry.kind != DRAFTER:
                self.target.addItem(entry.name, entry.spec)
            # a registry's drafter title (English, no Qt there) is translated in its context
            name = QCoreApplication.translate("Drafters", entry.name) if entry.kind == DRAFTER else entry.name
            self.draft.addItem(name, entry.spec)
        self.draft.addItem(self.tr("none (target only)"), NO_DRAFT)
        for combo in (self.target, self.draft):
            combo.insertSeparator(combo.count())
            combo.addItem(self.tr("Browse folder…"), BROWSE_DIR)
            combo.addItem(self.tr("Browse .gguf file…"), BROWSE_GGUF)

    def set_trained_drafts(self, infos) -> None:
        """List the target's trained drafts (app.models.TrainedDraftInfo) after 'auto', with α and c from
        each draft's evaluation report; earlier listed ones are replaced."""
        for i in range(self.draft.count() - 1, -1, -1):
            if self.draft.itemData(i, TRAINED_ROLE):
                self.draft.removeItem(i)

        def fmt(x):
            return "?" if x is None else f"{x:.2f}"

        for offset, info in enumerate(infos, start=1):
            label = self.tr("{0} · α {1} (T=0), {2} (T=0.7) · c {3}").format(
                info.name, fmt(info.alpha_greedy), fmt(info.alpha_sampled), fmt(info.c))
            self.draft.insertItem(offset, label, str(info.path))
            self.draft.setItemData(offset, True, TRAINED_ROLE)
            self.draft.setItemData(offset, self.tr("trained draft in {0}").format(info.path),
                                   Qt.ItemDataRole.ToolTipRole)

    def select(self, combo: QComboBox, spec: str) -> None:
        """Show spec as the current entry, adding it (a browsed path) when it is not listed."""
        index = combo.findData(spec)
        if index < 0:
            combo.insertItem(combo.count() - 3, spec, spec)
            index = combo.findData(spec)
        combo.setCurrentIndex(index)

    def _picked(self, combo: QComboBox, index: int, signal) -> None:
        spec = combo.itemData(index)
        if spec == BROWSE_DIR:
            spec = QFileDialog.getExistingDirectory(self, self.tr("Model folder (save_pretrained)"))
        elif spec == BROWSE_GGUF:
            spec, _ = QFileDialog.getOpenFileName(self, self.tr("GGUF model"), "", self.tr("GGUF (*.gguf)"))
        if spec:
            self.select(combo, spec)
            signal.emit(spec)

    def set_models_enabled(self, enabled: bool) -> None:
        self.target.setEnabled(enabled)

