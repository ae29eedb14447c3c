"""The "Compile decoding steps" toggle: static caches and torch.compile'd steps, built and warmed up in
the engine thread before the next message, with progress in the status bar; off returns to the
dynamic-cache engine. The engine's output is the same either way (tests/engine/test_static.py).

Composed into the window, not a mixin: handed the chat model (which holds the StaticDecoder and is
LOADING while it warms up), the engine thread's worker, and the window whose status bar and banner it uses."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.session import State

from .worker import WarmUpRequest


class CompileFlow(QObject):
    _warm = Signal(object)  # queued into the engine thread, where the worker lives

    def __init__(self, window, model, worker) -> None:
        super().__init__(window)
        self.window, self.model = window, model
        self.request: WarmUpRequest | None = None  # the last warm-up asked for
        self._warm.connect(worker.warm_up)
        window.controls.compile_changed.connect(self.toggled)
        window.controls.gamma.valueChanged.connect(self._gamma_changed)

    def links(self, worker) -> list:
        """The worker's warm-up signals and their slots here (the window's table of engine connections)."""
        return [(worker.warm_progress, self._on_progress), (worker.warmed, self._on_warmed),
                (worker.warm_failed, self._on_failed)]

    def toggled(self, on: bool) -> None:
        self.model.set_static(None)
        if on and self.model.target is not None and not self.model.loading:
            # behind a running answer, after it; while loading, use_models starts it once the pair is in
            self.model.when_idle(State.LOADING, self.warm_up)

    def _beyond_range(self) -> bool:
        """The γ the controls now allow is past what was compiled (a larger hand-set γ, or γ back on auto)."""
        request = self.request
        return request is not None and self.model.gamma_max(self.window.controls.hand_gamma()) > request.max_gamma

    def _gamma_changed(self, *_) -> None:
        """Compiled again, before the next message, when the new γ range is larger than the compiled one."""
        if self.model.static is not None and self._beyond_range():
            self.model.set_static(None)
            self.model.when_idle(State.LOADING, self.warm_up)

    def warm_up(self) -> None:
        """In the LOADING state (Send waits: the first message should not pay for compiling). Every γ the
        pair can ask for is compiled now (ChatModel.gamma_max, as the step panels are sized), never mid-answer."""
        w, model = self.window, self.model
        w.progress.setMaximum(0)
        w.progress.setVisible(True)
        w.progress_label.setText(self.tr("Compiling decoding steps …"))
        self.request = WarmUpRequest(model.target, model.drafter, model.gamma_max(w.controls.hand_gamma()),
                                     model.closing)
        self._warm.emit(self.request)

    def _on_progress(self, done: int, total: int) -> None:
        w = self.window
        w.progress.setMaximum(total)
        w.progress.setValue(done)
        w.progress_label.setText(self.tr("Compiling decoding steps … {0} of {1}").format(done, total))

    def _on_warmed(self, decoder, seconds: float) -> None:
        w = self.window
        self.model.set_static(decoder if w.controls.compile.isChecked() else None)
        w.stats.baseline_step = None  # the speedup baseline is re-timed on the compiled path
        w.progress.setVisible(False)
        w.progress_label.setText(self.tr("Ready · decoding steps compiled in {0:.1f} s").format(seconds))
        if self.model.static is not None and self._beyond_range():  # γ was raised while this warmed up
            self.model.set_static(None)
            self.warm_up()  # still loading
            return
        self.model.end(State.LOADING)
        w.queued.release()  # a question sent during the load that preceded this warm-up

    def _on_failed(self, message: str) -> None:
        w = self.window
        self.model.set_static(None)
        w.progress.setVisible(False)
        w.progress_label.setText("")
        w.controls.compile.blockSignals(True)
        w.controls.compile.setChecked(False)
        w.controls.compile.blockSignals(False)
        if not self.model.closing.is_set():
            w.show_banner(self.tr("Compiled decoding is not available: {0}").format(message))
        self.model.end(State.LOADING)
        w.queued.release()  # answered eagerly instead

