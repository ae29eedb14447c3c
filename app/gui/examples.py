"""Example prompts on the empty chat, one click each, chosen to show contrasts. Each names the draft
that makes its point; clicking one switches to that draft (queued like any draft change) and
sends the prompt once it is in place. Chosen by running them on the default model (greedy, γ 4,
40 tokens): the weekdays with the self-draft, every round accepting all four drafts; a poem with prompt
lookup, many tokens corrected; copying a list with prompt lookup, long accepted runs.

Each title states that example's own speed, as measured here when it last ran (its answer's measured
speedup against target-only steps of this chat), or no figure before it has run: a drafter's average
over other chats says little about one prompt (prompt lookup averages about 1× target-only in chat and
copies a list near 1.9×). Choosing one whose draft is predicted slower on average says so first.
"""

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
    the conversation (an example's answer gives its title its speed), the chat view that offers them, the
    status sink, the input box a prompt goes into, `load(target, draft)` that switches to an example's draft
    and `send()` that sends the input box."""

    def __init__(self, model, conversation, chat, status, input_box, load, send) -> None:
        self.model, self.conversation, self.chat, self.status = model, conversation, chat, status
        self.input, self.load, self.send = input_box, load, send
        self.pending: str | None = None  # the prompt of an example waiting for its draft to load
        self.items = examples()
        self._speeds: dict[str, tuple[str, float]] = {}  # draft spec -> (label, predicted average speedup here)
        self._measured: dict[str, float] = {}  # example prompt -> its answer's measured speedup here, when it ran
        chat.set_examples([(e.title, e.prompt) for e in self.items])
        chat.example_clicked.connect(self.run)
        conversation.answer_ended.connect(self.answered)

    def measured(self, selection) -> None:
        """After a load: only the examples whose draft this target can build (a CPU target already in its
        cheapest form, the native or the bf16 path, has no self-draft: that example would only say so), and
        every drafter the calibration measured gives its predicted average speed (said before a slow one runs)."""
        self.items = [e for e in examples() if self._buildable(e.draft)]
        if selection is not None:
            self._speeds.update({o.name: (o.label, o.predicted) for o in selection.choice.options})
        self._offer()

    def answered(self, index: int) -> None:
        """An answer ended: when it answered an example's prompt with the example's draft, its measured speedup
        becomes that example's figure."""
        messages = self.conversation.messages
        stats = messages[index].stats if 0 <= index < len(messages) else {}
        question = messages[index - 1].content if index > 0 else None
        example = next((e for e in self.items if e.prompt == question), None)
        speedup = stats.get("speedup")
        if example is not None and speedup and example.draft == self.model.draft_spec and not messages[index].partial:
            self._measured[example.prompt] = speedup
            self._offer()

    def _offer(self) -> None:
        self.chat.set_examples([(self._title(e), e.prompt) for e in self.items])

    def _buildable(self, draft: str) -> bool:
        target = self.model.target
        if draft != "self" or target is None:
            return True
        from app.drafting.drafts import self_draft_dtype

        return self_draft_dtype(target) is not None

    def _predicted_text(self, example: Example) -> str | None:
        """The example's draft's predicted average speed here, when it is a slowdown (said before running it)."""
        if example.draft not in self._speeds:
            return None
        label, speedup = self._speeds[example.draft]
        if speedup >= 1.0:
            return None
        return QCoreApplication.translate(
            "Examples", "{0} is predicted at {1:.2f}× target-only on this machine on average, slower").format(label, speedup)

    def _title(self, example: Example) -> str:
        """The title with this example's own measured speed, once it has run here; none before."""
        speedup = self._measured.get(example.prompt)
        if speedup is None:
            return example.title
        if speedup < 1.0:
            speed = QCoreApplication.translate("Examples", "measured here: {0:.2f}× target-only, slower").format(speedup)
        else:
            speed = QCoreApplication.translate("Examples", "measured here: {0:.2f}× target-only").format(speedup)
        return f"{example.title} ({speed})"

    def run(self, index: int) -> None:
        model = self.model
        if not model.idle or model.target is None:
            return
        example = self.items[index]
        slower = self._predicted_text(example)
        measured = self._measured.get(example.prompt)
        if slower and (measured is None or measured < 1.0):  # never a slowdown without saying so
            self.status.flash(QCoreApplication.translate(
                "Examples", "This example shows the colours, not a speedup: {0}").format(slower), 8000)
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
