"""Racing one prompt: two real decodes in the engine thread, one after the other (neither steals
the other's cores), saved as a two-run recording and replayed side by side in the RaceView."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot
from PySide6.QtWidgets import QDockWidget, QFileDialog, QPlainTextEdit, QWidget

from app.recording import SUFFIX, Recording, write
from app.recording.builder import header
from app.session import State

if TYPE_CHECKING:
    from app.engine.params import DecodeParams
    from app.engine.protocols import AnyDrafter, Drafter
    from app.models import LoadedModel
    from app.session import ChatModel, Conversation

    from .answer_recorder import AnswerRecorder
    from .controls import ControlsPanel
    from .race_view import RaceView
    from .status import WindowStatus

MODES = ("target", "lookup", "tree")  # speculative vs target-only; the current draft vs prompt lookup; chain vs tree


@dataclass
class RaceRequest:
    target: LoadedModel
    drafters: tuple[AnyDrafter | None, AnyDrafter]  # the first run's drafter (None: target-only), the second's
    turns: list[dict]
    params: DecodeParams  # fixed for both runs


def race_drafters(mode: str, drafter, target: LoadedModel) -> tuple:
    """(first run's drafter, second run's) for a race mode. "tree" races the current draft (prompt lookup
    without one) as a chain against the same draft as a token tree: the current tree when the measured
    choice made one (its chain form races it), else a tree of DEFAULT_TREE_NODES nodes. Prompt lookup is the
    registry's (make_drafter), as every front end builds it: it never proposes the target's template tokens.
    ValueError (the draft's name) when the draft has no tree form."""
    from app.drafting.drafts import DEFAULT_TREE_NODES, make_drafter
    from app.drafting.registry import PROMPT_LOOKUP
    from app.engine.policy import TREE_DEPTH

    def lookup() -> Drafter:
        built = make_drafter(PROMPT_LOOKUP, target)
        assert built is not None  # prompt lookup always builds
        return built

    current = drafter or lookup()
    if mode == "lookup":
        return current, lookup()
    if mode != "tree":
        return None, current
    chain = current.chain_form()
    if chain is None:  # a tree built as one: no chain to race it against
        raise ValueError(current.name)
    if chain is not current:  # the current draft already proposes trees
        return chain, current
    tree = chain.tree_form(DEFAULT_TREE_NODES, TREE_DEPTH)
    if tree is None:
        raise ValueError(chain.name)
    return chain, tree


class RaceWorker(QObject):
    """Lives in the engine thread, like GenerationWorker: runs the engine, emits what it did."""

    done = Signal(object)
    failed = Signal(str)

    @Slot(object)
    def run(self, request: RaceRequest) -> None:
        from app.recording.headless import record_run
        from app.session.answer_loop import AnswerLoop

        try:  # both runs at the same fixed params: the race compares drafters, not γ choices
            runs = [record_run(AnswerLoop(target=request.target, drafter=drafter, params=request.params), request.turns,
                               baseline_steps=0) for drafter in request.drafters]
        except Exception as exc:  # a failed race ends the race, never the app
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
            return
        title = request.turns[-1]["content"][:60]
        self.done.emit(Recording(header("race", title, str(request.target.device)), runs))


class RaceFlow(QObject):
    """Chat ▸ Race: two runs of one prompt, measured one after the other and replayed side by side."""

    _start = Signal(object)  # queued into the engine thread

    def __init__(self, *, model: ChatModel, conversation: Conversation, status: WindowStatus, controls: ControlsPanel,
                 recorder: AnswerRecorder, input_box: QPlainTextEdit, view: RaceView, column: list[QWidget],
                 side: list[QDockWidget], on_stage: Callable[[], bool], engine_thread: QThread,
                 parent: QObject | None = None) -> None:
        """model: the pair raced (RACING while the two runs take the engine); conversation: its system prompt,
        and its last question when the input box is empty; controls: the decoding controls; recorder: a race
        is the last recording (File ▸ Save recording saves it); view: the race view; column: the chat column
        it replaces while it shows; side: the side column's docks it hides meanwhile (their figures are the
        chat's, not the race's); on_stage: whether the window presents; engine_thread: where its worker lives."""
        super().__init__(parent)
        self.model, self.conversation, self.status, self.controls = model, conversation, status, controls
        self.recorder, self.input, self.view = recorder, input_box, view
        self.column, self.side, self.on_stage = column, side, on_stage
        self.error: str | None = None
        self.view.closed.connect(self.close)
        self.view.save_requested.connect(self.save)
        self.worker = RaceWorker()
        self.worker.moveToThread(engine_thread)
        self._start.connect(self.worker.run)
        self.worker.done.connect(self._done)
        self.worker.failed.connect(self._failed)
        self._hidden: dict = {}
        self._front: list = []  # the side column's docks that were in front of their tab group

    def from_input(self, mode: str) -> None:
        text = self.input.toPlainText().strip() or self.conversation.last_user_text()
        if not text:
            self.status.flash(QCoreApplication.translate("Race", "Type a prompt to race first"), 3000)
            return
        self.start(text, mode)

    def start(self, prompt: str, mode: str = "target") -> bool:
        model = self.model
        if not model.idle or model.target is None:
            return False
        try:
            drafters = race_drafters(mode, model.drafter, model.target)
        except ValueError as exc:
            self.status.show_banner(QCoreApplication.translate("Race", "The {0} draft has no token-tree form to race").format(exc))
            return False
        system = self.conversation.system_prompt.strip()
        turns = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        model.begin(State.RACING)
        self.error = None
        self.status.say(QCoreApplication.translate("Race", "Racing: two runs, one after the other …"))
        # γ as the chat's next answer would start it (the live controller's while γ is on auto)
        params = model.answer(self.controls.params, gamma_auto=self.controls.gamma_is_auto).params()
        self._start.emit(RaceRequest(model.target, drafters, turns, params))
        return True

    def _done(self, recording: Recording) -> None:
        self.model.end(State.RACING)
        self.recorder.keep(recording)  # File ▸ Save recording saves the race
        self.status.say(QCoreApplication.translate("Race", "Race measured · replaying side by side"))
        self.show(recording)

    def _failed(self, message: str) -> None:
        self.model.end(State.RACING)
        self.error = QCoreApplication.translate("Race", "The race failed: {0}").format(message)
        self.status.show_banner(self.error)

    def show(self, recording: Recording) -> None:
        """Replay a race recording side by side, in place of the chat column."""
        on_stage = self.on_stage()
        if not self.view.isVisible():
            # the two runs take the whole width: the chat's statistics (empty for the race) step aside
            self._hidden = {widget: widget.isVisible() for widget in self.column + self.side}
            self._front = [dock for dock in self.side if dock.isVisible() and not dock.visibleRegion().isEmpty()]
            for widget in self._hidden:
                widget.hide()
        self.view.controls.setVisible(not on_stage)
        self.view.show_recording(recording)

    def close(self) -> None:
        if not self.view.isVisible():
            return
        self.view.timer.stop()
        self.view.hide()
        for widget, visible in self._hidden.items():
            widget.setVisible(visible)
        for dock in self._front:
            dock.raise_()  # the tab that was in front, in front again
        self._hidden, self._front = {}, []

    def save(self) -> None:
        if self.view.recording is None:
            return
        path, _ = QFileDialog.getSaveFileName(self.view, QCoreApplication.translate("Race", "Save race"), f"race{SUFFIX}",
                                              QCoreApplication.translate("Race", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            write(Path(path), self.view.recording)
