"""Example prompts on the empty chat, one click each, chosen to show contrasts. Each names the draft
that makes its point; clicking one switches to that draft (queued like any draft change) and
sends the prompt once it is in place. Chosen by running them on the default model (greedy, γ 4,
40 tokens): self-draft on the weekdays α 1.00, every round accepted all four drafts; prompt lookup
on the poem α 0.33, 21 of 40 tokens corrected; prompt lookup copying the list α 0.77, 2.7 tokens
per round against 1.1 on the poem.

On this machine a draft may be slower than the target alone (issue #20): each title says the speed its
draft was measured at here (the calibration's predicted speedup, as auto uses it), and choosing one that
is slower says so in the status bar. To be chosen again, per machine, once the faster CPU path lands."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QCoreApplication


@dataclass(frozen=True)
class Example:
    title: str
    prompt: str
    draft: str  # a draft spec, as the draft picker takes it


def examples() -> list[Example]:
    return [
        Example(QCoreApplication.translate("Examples", "Mostly accepted: the self-draft agrees with the target"),
                "List the days of the week, one per line.", "self"),
        Example(QCoreApplication.translate("Examples", "Many corrections: prompt lookup guessing at a poem"),
                "Write a short poem about a purple lighthouse on the moon.", "prompt-lookup"),
        Example(QCoreApplication.translate("Examples", "Prompt lookup shines: copying from the prompt"),
                "Copy this list exactly, then add one more item in the same style:\n- apples: 3 kg, red\n"
                "- pears: 2 kg, green\n- plums: 5 kg, purple", "prompt-lookup"),
    ]


class ExampleFlow:
    """The examples on the empty chat. Handed the chat model (which draft is in, whether the engine is idle),
    the chat view that offers them, the status sink, the input box a prompt goes into, `load(target, draft)`
    that switches to an example's draft and `send()` that sends the input box."""

    def __init__(self, model, chat, status, input_box, load, send) -> None:
        self.model, self.chat, self.status, self.input, self.load, self.send = model, chat, status, input_box, load, send
        self.pending: str | None = None  # the prompt of an example waiting for its draft to load
        self.items = examples()
        self._speeds: dict[str, tuple[str, float]] = {}  # draft spec -> (label, speedup measured here)
        chat.set_examples([(e.title, e.prompt) for e in self.items])
        chat.example_clicked.connect(self.run)

    def measured(self, selection) -> None:
        """After a load: only the examples whose draft this target can build (a CPU target already in its
        cheapest form, the native or the bf16 path, has no self-draft: that example would only say so), and
        every drafter the calibration measured gives its speed to the examples using it."""
        self.items = [e for e in examples() if self._buildable(e.draft)]
        if selection is not None:
            self._speeds.update({o.name: (o.label, o.predicted) for o in selection.choice.options})
        self.chat.set_examples([(self._title(e), e.prompt) for e in self.items])

    def _buildable(self, draft: str) -> bool:
        target = self.model.target
        if draft != "self" or target is None:
            return True
        from app.models.drafts import self_draft_dtype

        return self_draft_dtype(target) is not None

    def _speed_text(self, example: Example) -> str | None:
        if example.draft not in self._speeds:
            return None
        label, speedup = self._speeds[example.draft]
        if speedup < 1.0:
            return QCoreApplication.translate("Examples", "{0}: {1:.2f}× target-only on this machine, slower").format(
                label, speedup)
        return QCoreApplication.translate("Examples", "{0}: {1:.2f}× target-only on this machine").format(label, speedup)

    def _title(self, example: Example) -> str:
        speed = self._speed_text(example)
        return f"{example.title} ({speed})" if speed else example.title

    def run(self, index: int) -> None:
        model = self.model
        if not model.idle or model.target is None:
            return
        example = self.items[index]
        speed = self._speed_text(example)
        if speed and self._speeds[example.draft][1] < 1.0:  # never a slowdown without saying so
            self.status.flash(QCoreApplication.translate(
                "Examples", "This example shows the colours, not a speedup: {0}").format(speed), 8000)
        if example.draft != model.draft_spec:
            self.pending = example.prompt
            self.load(model.target_spec, example.draft)
            return
        self.input.setPlainText(example.prompt)
        self.send()

    def send_pending(self) -> None:
        """After a load: the example that asked for the new draft goes out now."""
        prompt, self.pending = self.pending, None
        if prompt is not None and self.model.target is not None:
            self.input.setPlainText(prompt)
            self.send()

    def load_failed(self, _message: str = "") -> None:
        self.pending = None
