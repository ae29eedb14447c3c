"""Recording a run without a window (`speclens record`, the race): the same batches, baseline and
timing the GUI worker delivers. Imports torch when called, not when imported."""

from __future__ import annotations

from dataclasses import asdict

from app.models.baseline import BASELINE_STEPS, time_target_steps

from .builder import RunBuilder, drafter_info, model_info, top_vocab
from .format import Run


def record_run(target, drafter, turns: list[dict], params, baseline_steps: int = BASELINE_STEPS, label: str | None = None,
               cancel=None) -> Run:
    """Decode `turns` with target (a LoadedModel) and drafter; every event lands in the Run with the
    moment it was produced. baseline_steps > 0 first times target-only steps (the measured speedup)."""
    import torch

    from app.engine import FinishedEvent, RoundEvent, decode

    input_ids = target.encode_chat(turns)
    builder = RunBuilder({
        "label": label or ("speculative" if drafter is not None else "target only"),
        "prompt": turns,
        "target": model_info(target),
        "draft": drafter_info(drafter),
        "params": asdict(params),
        "device": str(target.device),
    })
    common = dict(stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size, cancel=cancel)
    with torch.inference_mode():
        if baseline_steps:
            step = time_target_steps(target, input_ids, params, steps=baseline_steps, cancel=cancel)
            if step is not None:
                builder.baseline(step)
        builder.t0 = builder.clock()  # the run's clock starts when decoding does
        builder.run.baseline_t = 0.0
        batch: list = []
        for event in decode(target.model, input_ids, drafter, params, tokenizer=target.tokenizer, **common):
            if isinstance(event, FinishedEvent):
                builder.finished(event)
                break
            batch.append(event)
            if isinstance(event, RoundEvent):
                builder.events(batch)
                batch = []
    builder.run.info["vocab"] = top_vocab(builder.run, target.tokenizer)
    return builder.run
