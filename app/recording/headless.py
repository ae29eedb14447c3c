"""Recording a run without a window (`speclens record`, the race): the same batches, baseline and
timing the GUI worker delivers, the answer run through its AnswerLoop as in the app (with γ on auto, the
live controller's γ round by round). Imports torch when called, not when imported."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

from app.machine.baseline import BASELINE_STEPS

from .builder import RunBuilder, drafter_info, model_info, top_vocab
from .format import Run

if TYPE_CHECKING:
    import threading

    from app.session.answer_loop import AnswerLoop


def record_run(answer: AnswerLoop, turns: list[dict], baseline_steps: int = BASELINE_STEPS, label: str | None = None,
               cancel: threading.Event | None = None) -> Run:
    """Decode `turns` as `answer` runs them (its target, drafter and params, its live γ); every event lands
    in the Run with the moment it was produced, each round with the γ it ran at. baseline_steps > 0 first
    times target-only steps (the measured speedup; the live controller hears the step, as in the app)."""
    import torch

    from app.engine import FinishedEvent, RoundEvent

    target, drafter = answer.target, answer.drafter
    input_ids = target.encode_chat(turns)
    builder = RunBuilder({
        "label": label or ("speculative" if drafter is not None else "target only"),
        "prompt": turns,
        "target": model_info(target),
        "draft": drafter_info(drafter),
        "params": asdict(answer.params()),  # as the first round reads them; each round's γ is in its event
        "device": str(target.device),
    })
    with torch.inference_mode():
        if baseline_steps:
            step = answer.baseline(input_ids, baseline_steps, cancel)
            if step is not None:
                builder.baseline(step)
        builder.t0 = builder.clock()  # the run's clock starts when decoding does
        builder.run.baseline_t = 0.0
        batch: list = []
        for event in answer.events(input_ids, cancel=cancel):
            if isinstance(event, FinishedEvent):
                builder.finished(event)
                break
            batch.append(event)
            if isinstance(event, RoundEvent):
                builder.events(batch)
                batch = []
    builder.run.info["vocab"] = top_vocab(builder.run, target.tokenizer)
    return builder.run
