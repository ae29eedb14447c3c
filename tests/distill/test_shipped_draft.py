"""The draft shipped for the embedded model: found by `--draft trained`, exact greedy output."""

from __future__ import annotations

import pytest
from engine.helpers import reference

from app.drafting.drafts import make_drafter
from app.drafting.trained_drafts import list_trained_drafts
from app.engine import DecodeParams, generate
from app.engine.feature_drafter import FeatureDrafter
from app.paths import resource_path

SHIPPED = resource_path("drafts", "smollm2-135m")
CHATS = ("Name three primary colours.", "Write a haiku about the sea.")


def test_shipped_draft_has_its_command_and_report():
    for name in ("feature_draft.json", "model.safetensors", "report.json", "report.md", "command.txt"):
        assert (SHIPPED / name).is_file(), name
    assert (SHIPPED / "command.txt").read_text().startswith("speclens distill ")


@pytest.mark.slow
def test_shipped_draft_is_exact_on_the_default_model(default_target):
    target = default_target
    [info] = [i for i in list_trained_drafts(target) if i.path == SHIPPED]
    assert info.alpha_greedy is not None and info.c is not None
    drafter = make_drafter("trained", target)
    assert isinstance(drafter, FeatureDrafter)
    stop = target.stop_token_ids[0]
    for chat in CHATS:
        prompt = target.encode_chat([{"role": "user", "content": chat}])
        expected = reference(target.model, prompt, 32, stop)
        for gamma in (1, 2, 4, 8):
            params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=32)
            got = generate(target.model, prompt, drafter, params, stop_token_ids=(stop,)).token_ids
            assert got == expected, (chat, gamma)
