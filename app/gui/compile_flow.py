"""The "Compile decoding steps" toggle: static caches and torch.compile'd steps, built and warmed up in
the engine thread before the next message, with progress in the status bar; off returns to the
dynamic-cache engine. The engine's output is the same either way (tests/engine/test_static.py)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.session import Observers, State

from .worker import WarmUpRequest


class CompileFlow(QObject):
    """Handed the chat model (which holds the StaticDecoder and is LOADING while it warms up), the engine
    thread's worker, the decoding controls (the toggle and the γ range), the status sink and the live
    statistics (the speedup baseline is timed again on the compiled path). `ended` () once a warm-up is over,
    compiled or refused."""

    _warm = Signal(object)  # queued into the engine thread, where the worker lives

    def __init__(self, model, worker, controls, status, stats, parent=None) -> None:
        super().__init__(parent)
        self.model, self.controls, self.status, self.stats = model, controls, status, stats
        self.request: WarmUpRequest | None = None  # the last warm-up asked for
        self.ended = Observers()
        self._warm.connect(worker.warm_up)
        controls.compile_changed.connect(self.toggled)
        controls.gamma.valueChanged.connect(self._gamma_changed)

    def links(self, worker) -> list:
        """The worker's warm-up signals and their slots here (the window's table of engine connections)."""
        return [(worker.warm_progress, self._on_progress), (worker.warmed, self._on_warmed),
                (worker.warm_failed, self._on_failed)]

    def toggled(self, on: bool) -> None:
        self.model.set_static(None)
        if on and self.model.target is not None and not self.model.loading:
            # behind a running answer, after it; while loading, after_load starts it once the pair is in
            self.model.when_idle(State.LOADING, self.warm_up)

    def after_load(self) -> bool:
        """A pair was just installed, still LOADING: True when its compiled steps now warm up (the load then
        ends once they are warm), False when the box is off."""
        if not self.controls.compile.isChecked():
            return False
        self.warm_up()
        return True

    def _beyond_range(self) -> bool:
        """The γ the controls now allow is past what was compiled (a larger hand-set γ, or γ back on auto)."""
        request = self.request
        return request is not None and self.model.gamma_max(self.controls.hand_gamma()) > request.max_gamma

    def _gamma_changed(self, *_) -> None:
        """Compiled again, before the next message, when the new γ range is larger than the compiled one."""
        if self.model.static is not None and self._beyond_range():
            self.model.set_static(None)
            self.model.when_idle(State.LOADING, self.warm_up)

    def warm_up(self) -> None:
        """In the LOADING state (Send waits: the first message should not pay for compiling). Every γ the
        pair can ask for is compiled now (ChatModel.gamma_max, as the step panels are sized), never mid-answer."""
        model = self.model
        self.status.busy(self.tr("Compiling decoding steps …"))
        self.request = WarmUpRequest(model.target, model.drafter, model.gamma_max(self.controls.hand_gamma()),
                                     model.closing)
        self._warm.emit(self.request)

    def _on_progress(self, done: int, total: int) -> None:
        self.status.progress_to(done, total, self.tr("Compiling decoding steps … {0} of {1}").format(done, total))

    def _on_warmed(self, decoder, seconds: float) -> None:
        self.model.set_static(decoder if self.controls.compile.isChecked() else None)
        self.stats.baseline_step = None  # the speedup baseline is re-timed on the compiled path
        self.status.done(self.tr("Ready · decoding steps compiled in {0:.1f} s").format(seconds))
        if self.model.static is not None and self._beyond_range():  # γ was raised while this warmed up
            self.model.set_static(None)
            self.warm_up()  # still loading
            return
        self.model.end(State.LOADING)
        self.ended.emit()  # a question sent during the load that preceded this warm-up goes now

    def _on_failed(self, message: str) -> None:
        self.model.set_static(None)
        self.status.done("")
        compile_box = self.controls.compile
        compile_box.blockSignals(True)
        compile_box.setChecked(False)
        compile_box.blockSignals(False)
        if not self.model.closing.is_set():
            self.status.show_banner(self.tr("Compiled decoding is not available: {0}").format(message))
        self.model.end(State.LOADING)
        self.ended.emit()  # answered eagerly instead
