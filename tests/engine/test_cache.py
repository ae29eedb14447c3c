"""KV rollback: after every round both caches hold exactly the kept context and nothing stale."""

from __future__ import annotations

import pytest
import torch

from app.engine import DecodeParams, ModelDrafter
from app.engine.kv import forward, new_cache
from app.engine.kv import rollback as crop  # bound here, so the planted no-op rollbacks leave it alone
from app.engine.runner import begin_runner

GAMMA = 4
PROMPT = [5, 9, 12, 7, 3]


def cache_faults(target, draft, n_rounds: int = 12, planted: str | None = None) -> list[str]:
    """Drive a dynamic-cache runner round by round; describe the caches that are off (stops at the first).
    planted: "target" or "draft", whose cache backend never drops its rejected drafts."""
    params = DecodeParams(gamma=GAMMA, temperature=1.0)
    drafter = ModelDrafter(draft)
    drafter.seed(1)
    drafter.begin()
    ids_list = list(PROMPT)
    runner = begin_runner(target, ids_list, drafter, torch.Generator().manual_seed(0), 0)
    cache = runner.cache.cache
    if planted is not None:
        backend = runner.cache.backend if planted == "target" else drafter.backend
        backend.rollback = lambda cache, length: None  # an instance attribute: the other side keeps its own
    rejections = 0
    for r in range(n_rounds):
        verdict = runner.step(ids_list, GAMMA, params, target.config.vocab_size).verdict
        drafted, n = list(verdict.drafts), verdict.n_accepted
        rejections += n < GAMMA
        kept = len(ids_list) + n
        # The drafter fed the whole context and x_1..x_{gamma-1}; it keeps what survives of that.
        expected = {"target": kept, "draft": min(len(ids_list) + GAMMA - 1, kept)}
        caches = {"target": (target, cache), "draft": (draft, drafter.cache)}
        faults = [
            f"round {r}: {name} cache holds {kv.get_seq_length()}, expected {expected[name]}"
            for name, (_, kv) in caches.items()
            if kv.get_seq_length() != expected[name]
        ]
        ids_list = ids_list + drafted[:n] + [verdict.next_token]
        for name, (model, kv) in caches.items():
            held = kv.get_seq_length()
            if held >= len(ids_list):
                faults.append(f"round {r}: {name} cache is not behind the context")
                continue
            # The next logits through the cache equal a cache-free pass over the same tokens.
            cached = forward(model, kv, torch.tensor(ids_list[held:]), keep=1)[-1]
            with torch.inference_mode():
                full = model(input_ids=torch.tensor([ids_list]), use_cache=False).logits[0, -1]
            if not torch.allclose(cached, full, atol=1e-5):
                faults.append(f"round {r}: {name} logits differ from a cache-free pass")
            crop(kv, held)  # leave the cache as the engine had it
        if faults:
            return faults
    assert rejections >= 3, "the check needs rounds with a rejection"
    return []


def test_caches_roll_back_exactly(vocab34_pair):
    assert cache_faults(*vocab34_pair) == []


@pytest.mark.parametrize("side", ["target", "draft"])
def test_skipped_rollback_is_caught(vocab34_pair, side):
    """Planted bug: one side never drops its rejected drafts."""
    faults = cache_faults(*vocab34_pair, planted=side)
    print("\n".join(faults))
    assert faults


def test_forward_passes_the_cache_under_the_supported_name(vocab34_pair):
    """transformers 5.24 renamed forward's `past_key_values` to `cache` (the old name warns, and 5.40
    removes it); a wrong name would be swallowed by **kwargs and the cache ignored."""
    import warnings

    from app.engine.kv import cache_argument

    target, _ = vocab34_pair
    cache = new_cache(target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forward(target, cache, torch.tensor(PROMPT), keep=1)
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning | DeprecationWarning)] == []
    assert cache.get_seq_length() == len(PROMPT)  # the cache was used, not dropped into **kwargs

    class Old:  # a 5.23-style or remote-code forward
        def forward(self, input_ids=None, past_key_values=None, **kwargs): ...

    assert cache_argument(Old) == "past_key_values"
