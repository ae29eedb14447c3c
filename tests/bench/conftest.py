import json

import pytest
import torch


@pytest.fixture(scope="module")
def tiny_pair(tiny_pair_dirs):
    from app.bench.runners import Pair
    from app.engine import ModelDrafter
    from app.models import load_model

    torch.set_num_threads(1)
    target_dir, draft_dir = tiny_pair_dirs
    target = load_model(str(target_dir), device="cpu")
    draft = load_model(str(draft_dir), device="cpu")
    return Pair(target, draft.model, ModelDrafter(draft.model))


@pytest.fixture(scope="session")
def tiny_suite(tmp_path_factory):
    """Short prompts: the tiny models hold 256 positions and tokenise per character."""
    path = tmp_path_factory.mktemp("suite") / "tiny.json"
    path.write_text(json.dumps({"prompts": [
        {"id": "chat", "kind": "chat", "messages": [{"role": "user", "content": "hello there, how are you?"}]},
        {"id": "echo", "kind": "rewriting", "messages": [{"role": "user", "content": "say it again. say it again."}]},
    ]}))
    return path
