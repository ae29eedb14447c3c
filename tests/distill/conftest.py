import pytest

from app.distill import DistillConfig, run_distill


def tiny_config(target_dir, out, **kw) -> DistillConfig:
    """Fixed data volume and step count, so the run takes seconds whatever the machine's load."""
    base = dict(target=str(target_dir), out=str(out), minutes=30, vocab_k=24, max_new_tokens=16, gen_batch=96,
                max_data_tokens=1500, max_steps=12, eval_prompts=3, eval_tokens=8, batch_tokens=1024)
    return DistillConfig(**(base | kw))


@pytest.fixture(scope="session")
def tiny_distilled(tiny_pair_dirs, tmp_path_factory):
    """(target_dir, draft_dir, report): one distill run on the tiny target, shared by the tests."""
    out = tmp_path_factory.mktemp("distilled") / "drafts" / "tiny"
    events = []
    report = run_distill(tiny_config(tiny_pair_dirs[0], out), progress=events.append)
    report["_events"] = events
    return tiny_pair_dirs[0], out, report
