"""Loading a model pair in the engine thread and installing it in the window."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from .model_loader import LoadRequest, LoadResult


class ModelFlowMixin:
    def load_models(self, target_spec: str, draft_spec: str) -> None:
        """Load in the engine thread; queued behind a running generation, so a draft swap made
        while answering applies to the next message."""
        self.loading = True
        self._sync_buttons()
        self.progress.setMaximum(0)  # busy until the loader reports a fraction
        self.progress.setVisible(True)
        self.progress_label.setText("Loading models …")
        self._load.emit(LoadRequest(target_spec, draft_spec, current=self.target, cancel=self.closing))

    def _on_load_progress(self, text: str, fraction: float) -> None:
        self.progress.setMaximum(1000)
        self.progress.setValue(int(fraction * 1000))
        self.progress_label.setText(text)

    def use_models(self, result: LoadResult) -> None:
        """Install a loaded pair: the loader's signal lands here, and benchmarks call it directly."""
        self.loading = False
        if self.target is not result.target:
            self.stats.baseline_step = None
            self.messages_since_baseline = 0
        self.target, self.drafter = result.target, result.drafter
        self.target_spec, self.draft_spec = result.target.spec, result.draft_spec
        tokenizer = result.target.tokenizer
        self.details.decode = lambda token_id: tokenizer.decode([token_id])
        self.controls.select(self.controls.target, self.target_spec)
        self.controls.select(self.controls.draft, self.draft_spec)
        self.settings.setValue("target", self.target_spec)
        self.settings.setValue("draft", self.draft_spec)
        self.progress.setVisible(False)
        self.progress_label.setText(f"Ready · loaded in {result.seconds:.1f} s")
        self.hide_banner()
        self._update_status()
        self._sync_buttons()

    def _on_load_failed(self, message: str) -> None:
        self.loading = False
        self.progress.setVisible(False)
        self.progress_label.setText("")
        if self.target is not None:  # a failed swap keeps the working pair
            self.controls.select(self.controls.target, self.target_spec)
            self.controls.select(self.controls.draft, self.draft_spec)
            box = QMessageBox(QMessageBox.Icon.Warning, "Could not load the model", message, parent=self)
            box.open()
        else:
            self.show_banner(f"Could not load the models: {message} — choose another target or draft on the right.")
        self._sync_buttons()

    def _draft_name(self) -> str:
        return self.drafter.name if self.drafter is not None else "none (target only)"
