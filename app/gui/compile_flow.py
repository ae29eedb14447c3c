"""The "Compile decoding steps" toggle: static caches and torch.compile'd steps, built and warmed up in
the engine thread before the next message, with progress in the status bar; off returns to the
dynamic-cache engine. The engine's output is the same either way (tests/engine/test_static.py)."""

from __future__ import annotations

from .worker import WarmUpRequest


class CompileFlowMixin:
    def _compile_toggled(self, on: bool) -> None:
        self.static = None
        if on and self.target is not None and not self.loading:
            self.warm_up_static()  # while loading, use_models starts it once the pair is in

    def warm_up_static(self) -> None:
        self.loading = True  # Send waits: the first message should not pay for compiling
        self._sync_buttons()
        self.progress.setMaximum(0)
        self.progress.setVisible(True)
        self.progress_label.setText(self.tr("Compiling decoding steps …"))
        self.warm_request = WarmUpRequest(self.target, self.drafter, self.controls.params().gamma, self.closing)
        self._warm.emit(self.warm_request)

    def _on_warm_progress(self, done: int, total: int) -> None:
        self.progress.setMaximum(total)
        self.progress.setValue(done)
        self.progress_label.setText(self.tr("Compiling decoding steps … {0} of {1}").format(done, total))

    def _on_warmed(self, decoder, seconds: float) -> None:
        self.loading = False
        self.static = decoder if self.controls.compile.isChecked() else None
        self.stats.baseline_step = None  # the speedup baseline is re-timed on the compiled path
        self.progress.setVisible(False)
        self.progress_label.setText(self.tr("Ready · decoding steps compiled in {0:.1f} s").format(seconds))
        self._sync_buttons()
        self.queued.release()  # a question sent during the load that preceded this warm-up

    def _on_warm_failed(self, message: str) -> None:
        self.loading = False
        self.static = None
        self.progress.setVisible(False)
        self.progress_label.setText("")
        self.controls.compile.blockSignals(True)
        self.controls.compile.setChecked(False)
        self.controls.compile.blockSignals(False)
        if not self.closing.is_set():
            self.show_banner(self.tr("Compiled decoding is not available: {0}").format(message))
        self._sync_buttons()
        self.queued.release()  # answered eagerly instead
