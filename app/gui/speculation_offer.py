""""Show speculation anyway": where auto runs target-only (chosen at load, or a draft dropped after an
answer), one click runs auto's fastest measured drafter and states what it costs on this machine; and
the line presentation mode shows to say which of the two the audience is watching.

The cost it states has one source: the speedup the
calibration predicted for that drafter (app.drafting.speculate_anyway.best_option), or, for a draft
dropped live, the speedup that made auto drop it (the chat model's `switched`, an app.engine.policy.Switch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QAction

if TYPE_CHECKING:
    from app.drafting.auto import Selection


class SpeculationOffer:
    """Handed the chat model (what runs, what auto measured), the decoding controls, the live statistics (the
    plot's notice), the status sink, the plots (whose button offers it), `load(target, draft, anyway)` that
    loads the offered drafter, and the recordings (a replay shows what was recorded). Follows the chat
    model: refresh() on each change of its pair or state."""

    def __init__(self, model, controls, stats, status, plots, load, recordings) -> None:
        self.model, self.controls, self.stats, self.status, self.plots = model, controls, stats, status, plots
        self.load, self.recordings = load, recordings
        self._restored: tuple[Selection | None, float] | None = None  # (selection, speedup) of a dropped draft taken back: its stated cost
        plots.notice_button.clicked.connect(self.run)
        self.action = QAction(QCoreApplication.translate("SpeculationOffer", "Show speculation anyway"), plots,
                              enabled=False)
        self.action.triggered.connect(self.run)
        model.pair_changed.connect(self.refresh)
        model.state_changed.connect(lambda _state: self.refresh())

    def offer(self) -> tuple[str, str, float] | None:
        """(draft spec, label, speedup on this machine) of what one click would run; None: nothing to offer."""
        model = self.model
        if model.target is None or model.drafter is not None or model.loading or self.recordings.replaying():
            return None
        if model.switched and model.selection is not None and model.selection.drafter is not None:
            profile = model.selection.profile()
            return model.selection.spec, profile.label if profile else model.selection.drafter.name, \
                model.switched.speedup
        from app.drafting.speculate_anyway import best_option  # loaded with the models: torch is in

        best = best_option(model.selection)
        return (best.name, best.label, best.predicted) if best is not None else None

    def refresh(self) -> None:
        """After a load, an answer or a live switch: the button and the menu action follow the offer."""
        offer = self.offer()
        text = None
        if offer is not None:
            text = QCoreApplication.translate("SpeculationOffer", "Show speculation anyway ({0}, {1:.2f}× on this machine)").format(offer[1], offer[2])
        self.plots.set_offer(text)
        self.action.setEnabled(offer is not None and not self.model.generating)
        self.action.setText(text or QCoreApplication.translate("SpeculationOffer", "Show speculation anyway"))

    def run(self) -> bool:
        """Speculate with the offered drafter: a dropped draft comes back at once; otherwise it loads in
        the engine thread on auto's measurements (nothing is timed again). False: nothing to offer."""
        model = self.model
        offer = self.offer()
        if offer is None or model.generating:
            return False
        spec, label, speedup = offer
        if model.switched:  # the dropped draft is still built: take it back, as a hand pick auto leaves alone
            selection = model.selection
            self._restored = (selection, speedup)
            self.stats.set_notice(QCoreApplication.translate("SpeculationOffer", "Speculating anyway with {0}: it ran at {1:.2f}× target-only on this machine.")
                                  .format(label, speedup))
            model.take_back()  # the controls, the status and this offer follow its pair_changed
            self.controls.select(self.controls.draft, selection.spec)
        else:
            self.load(model.target_spec, spec, anyway=model.selection)
        self.status.flash(QCoreApplication.translate("SpeculationOffer", "Speculating with {0} anyway: {1:.2f}× on this machine").format(
            label, speedup), 5000)
        return True

    def describe(self) -> str:
        """For presentation mode: plainly, target-only or which drafter speculates and at what speed."""
        model = self.model
        if self.recordings.replaying():  # a replay shows what was recorded
            draft = self.recordings.replayed_draft()
            return QCoreApplication.translate("SpeculationOffer", "Replay: speculating with {0}").format(draft["name"]) if draft else \
                QCoreApplication.translate("SpeculationOffer", "Replay: target only")
        if model.drafter is None:
            if self.offer() is not None:
                return QCoreApplication.translate("SpeculationOffer", "Target only: speculation is slower on this machine")
            return QCoreApplication.translate("SpeculationOffer", "Target only")
        speedup = self._speedup()
        if speedup is None:
            return QCoreApplication.translate("SpeculationOffer", "Speculating with {0}").format(model.drafter.name)
        return QCoreApplication.translate("SpeculationOffer", "Speculating with {0}, {1:.2f}× on this machine").format(model.drafter.name, speedup)

    def _speedup(self) -> float | None:
        model = self.model
        if self._restored is not None and self._restored[0] is model.selection:
            return self._restored[1]
        return model.selection.choice.predicted if model.selection is not None else None
