"""Racing one prompt: two real decodes in the engine thread, one after the other (neither steals
the other's cores), saved as a two-run recording and replayed side by side in the RaceView."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot
from PySide6.QtWidgets import QFileDialog

from app.recording import SUFFIX, Recording, write
from app.recording.builder import header

from .race_view import RaceView

MODES = ("target", "lookup", "tree")  # speculative vs target-only; the current draft vs prompt lookup; chain vs tree


@dataclass
class RaceRequest:
    target: object  # LoadedModel
    drafters: tuple  # (first run's drafter or None, second run's)
    turns: list
    params: object  # DecodeParams, fixed for both runs


def race_drafters(mode: str, drafter) -> tuple:
    """(first run's drafter, second run's) for a race mode. "tree" races the current draft (prompt lookup
    without one) as a chain against the same draft as a token tree: the current tree when the measured
    choice made one (its chain form races it), else a tree of DEFAULT_TREE_NODES nodes. ValueError (the
    draft's name) when the draft has no tree form."""
    from app.engine.drafters import PromptLookupDrafter
    from app.models.drafts import DEFAULT_TREE_NODES, chain_form, tree_form

    current = drafter or PromptLookupDrafter()
    if mode == "lookup":
        return current, PromptLookupDrafter()
    if mode != "tree":
        return None, current
    chain = chain_form(current)
    if chain is not current:  # the current draft already proposes trees
        return chain, current
    tree = tree_form(chain, DEFAULT_TREE_NODES)
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

        try:
            runs = [record_run(request.target, drafter, request.turns, request.params, baseline_steps=0)
                    for drafter in request.drafters]
        except Exception as exc:  # a failed race ends the race, never the app
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
            return
        title = request.turns[-1]["content"][:60]
        self.done.emit(Recording(header("race", title, str(request.target.device)), runs))


class _Driver(QObject):
    start = Signal(object)


class RaceFlowMixin:
    def _init_race(self) -> None:
        """After the engine thread exists."""
        self.racing = False
        self.race_error: str | None = None
        self.race_view = RaceView(self.colors)
        layout = self.centralWidget().layout()
        layout.insertWidget(layout.indexOf(self.chat), self.race_view, 1)
        self.race_view.closed.connect(self.close_race)
        self.race_view.save_requested.connect(self.save_race)
        self.race_worker = RaceWorker()
        self.race_worker.moveToThread(self.engine_thread)
        self._race_driver = _Driver(self)
        self._race_driver.start.connect(self.race_worker.run)
        self.race_worker.done.connect(self._race_done)
        self.race_worker.failed.connect(self._race_failed)
        self._race_hidden: dict = {}

    def race_input(self, mode: str) -> None:
        text = self.input.toPlainText().strip() or next(
            (m.content for m in reversed(self.chat.messages) if m.role == "user"), "")
        if not text:
            self.statusBar().showMessage(QCoreApplication.translate("Race", "Type a prompt to race first"), 3000)
            return
        self.start_race(text, mode)

    def start_race(self, prompt: str, mode: str = "target") -> bool:
        if self.generating or self.loading or self.racing or self.target is None:
            return False
        try:
            drafters = race_drafters(mode, self.drafter)
        except ValueError as exc:
            self.show_banner(QCoreApplication.translate("Race", "The {0} draft has no token-tree form to race").format(exc))
            return False
        system = self.system_prompt.text().strip()
        turns = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        self.racing = True
        self.race_error = None
        self.progress_label.setText(QCoreApplication.translate("Race", "Racing: two runs, one after the other …"))
        self._sync_buttons()
        self._race_driver.start.emit(RaceRequest(self.target, drafters, turns, self.controls.params()))
        return True

    def _race_done(self, recording: Recording) -> None:
        self.racing = False
        self.last_recording = recording
        self.progress_label.setText(QCoreApplication.translate("Race", "Race measured · replaying side by side"))
        self._sync_buttons()
        self.show_race(recording)

    def _race_failed(self, message: str) -> None:
        self.racing = False
        self.race_error = QCoreApplication.translate("Race", "The race failed: {0}").format(message)
        self.show_banner(self.race_error)
        self._sync_buttons()

    def _chat_column(self) -> list:
        return [self.system_prompt, self.chat, self.legend, self.input, self.send_button, self.stop_button,
                self.playback, self.readout]

    def show_race(self, recording: Recording) -> None:
        if not self.race_view.isVisible():
            # on stage the two runs take the whole width: the plots (the chat's, not the race's) step aside
            hidden = self._chat_column() + ([self.docks["plots"]] if self.presenting else [])
            self._race_hidden = {w: w.isVisible() for w in hidden}
            for w in self._race_hidden:
                w.hide()
        self.race_view.set_colors(self.colors)
        self.race_view.set_sizes(self.chat.font().pointSize())
        self.race_view.controls.setVisible(not self.presenting)
        self.race_view.show_recording(recording)

    def close_race(self) -> None:
        if not self.race_view.isVisible():
            return
        self.race_view.timer.stop()
        self.race_view.hide()
        for w, visible in self._race_hidden.items():
            w.setVisible(visible)
        self._race_hidden = {}

    def save_race(self) -> None:
        if self.race_view.recording is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, QCoreApplication.translate("Race", "Save race"), f"race{SUFFIX}",
                                              QCoreApplication.translate("Race", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            write(Path(path), self.race_view.recording)
