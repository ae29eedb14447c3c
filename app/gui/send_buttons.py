"""Send and Stop, and the model pickers, follow the chat model (its state and its pair) and the queued
question: one sync, run on each of their changes."""

from __future__ import annotations


class SendButtons:
    def __init__(self, model, queued, send_button, stop_button, controls) -> None:
        self.model, self.queued = model, queued
        self.send_button, self.stop_button, self.controls = send_button, stop_button, controls
        model.state_changed.connect(lambda _state: self.sync())
        model.pair_changed.connect(self.sync)
        queued.changed.connect(self.sync)

    def sync(self) -> None:
        model, queued = self.model, self.queued
        ready = model.target is not None and model.idle
        queueable = queued.accepting and not model.training and not queued.waiting  # sent once loaded
        self.send_button.setEnabled(ready or (queueable and not model.generating and not model.racing))
        self.stop_button.setEnabled(model.generating or queued.waiting)
        self.controls.set_models_enabled(not model.generating and not model.loading)
        self.controls.draft.setEnabled(not model.loading)
