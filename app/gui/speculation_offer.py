""""Show speculation anyway": where auto runs target-only (chosen at load, or a draft dropped after an
answer), one click runs auto's fastest measured drafter and states what it costs on this machine; and
the line presentation mode shows to say which of the two the audience is watching.

Composed into the window (handed it), not a mixin. The cost it states has one source: the speedup the
calibration predicted for that drafter (app.models.speculate_anyway.best_option), or, for a draft
dropped live, the speedup that made auto drop it (the chat model's `switched`, an app.engine.policy.Switch)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QAction


class SpeculationOffer:
    def __init__(self, window) -> None:
        self.window = window
        self._restored = None  # (selection, speedup) of a dropped draft taken back: its stated cost
        window.plots.notice_button.clicked.connect(self.run)
        self.action = QAction(QCoreApplication.translate("SpeculationOffer", "Show speculation anyway"), window, enabled=False)
        self.action.triggered.connect(self.run)

    def offer(self) -> tuple[str, str, float] | None:
        """(draft spec, label, speedup on this machine) of what one click would run; None: nothing to offer."""
        w = self.window
        if w.model.target is None or w.model.drafter is not None or w.model.loading or w.recordings.player is not None:
            return None
        if w.model.switched and w.model.selection is not None and w.model.selection.drafter is not None:
            profile = w.model.selection.profile()
            return w.model.selection.spec, profile.label if profile else w.model.selection.drafter.name, \
                w.model.switched.speedup
        from app.models.speculate_anyway import best_option  # loaded with the models: torch is in

        best = best_option(w.model.selection)
        return (best.name, best.label, best.predicted) if best is not None else None

    def refresh(self) -> None:
        """After a load, an answer or a live switch: the button and the menu action follow the offer."""
        offer = self.offer()
        text = None
        if offer is not None:
            text = QCoreApplication.translate("SpeculationOffer", "Show speculation anyway ({0}, {1:.2f}× on this machine)").format(offer[1], offer[2])
        self.window.plots.set_offer(text)
        self.action.setEnabled(offer is not None and not self.window.model.generating)
        self.action.setText(text or QCoreApplication.translate("SpeculationOffer", "Show speculation anyway"))

    def run(self) -> bool:
        """Speculate with the offered drafter: a dropped draft comes back at once; otherwise it loads in
        the engine thread on auto's measurements (nothing is timed again). False: nothing to offer."""
        w = self.window
        offer = self.offer()
        if offer is None or w.model.generating:
            return False
        spec, label, speedup = offer
        if w.model.switched:  # the dropped draft is still built: take it back, as a hand pick auto leaves alone
            selection = w.model.selection
            w.model.take_back()
            w.controls.set_auto_gamma(w.model.auto)
            w.controls.select(w.controls.draft, selection.spec)
            w.stats.set_notice(QCoreApplication.translate("SpeculationOffer", "Speculating anyway with {0}: it ran at {1:.2f}× target-only on this machine.")
                               .format(label, speedup))
            self._restored = (selection, speedup)
            w._update_status()
            self.refresh()
        else:
            w.model_flow.load_models(w.model.target_spec, spec, anyway=w.model.selection)
        w.statusBar().showMessage(QCoreApplication.translate("SpeculationOffer", "Speculating with {0} anyway: {1:.2f}× on this machine").format(
            label, speedup), 5000)
        return True

    def describe(self) -> str:
        """For presentation mode: plainly, target-only or which drafter speculates and at what speed."""
        w = self.window
        if w.recordings.player is not None:  # a replay shows what was recorded
            draft = w.recordings.player.run.info.get("draft")
            return QCoreApplication.translate("SpeculationOffer", "Replay: speculating with {0}").format(draft["name"]) if draft else \
                QCoreApplication.translate("SpeculationOffer", "Replay: target only")
        if w.model.drafter is None:
            if self.offer() is not None:
                return QCoreApplication.translate("SpeculationOffer", "Target only: speculation is slower on this machine")
            return QCoreApplication.translate("SpeculationOffer", "Target only")
        speedup = self._speedup()
        if speedup is None:
            return QCoreApplication.translate("SpeculationOffer", "Speculating with {0}").format(w.model.drafter.name)
        return QCoreApplication.translate("SpeculationOffer", "Speculating with {0}, {1:.2f}× on this machine").format(w.model.drafter.name, speedup)

    def _speedup(self) -> float | None:
        w = self.window
        if self._restored is not None and self._restored[0] is w.model.selection:
            return self._restored[1]
        return w.model.selection.choice.predicted if w.model.selection is not None else None
