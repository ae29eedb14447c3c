"""The distill tests' configuration: a tiny run of fixed size."""

from app.distill import DistillConfig


def tiny_config(target_dir, out, **kw) -> DistillConfig:
    """Fixed data volume and step count, so the run takes seconds whatever the machine's load."""
    base = dict(target=str(target_dir), out=str(out), minutes=30, vocab_k=24, max_new_tokens=16, gen_batch=96,
                max_data_tokens=1500, max_steps=12, eval_prompts=3, eval_tokens=8, batch_tokens=1024)
    return DistillConfig(**(base | kw))
