"""docs/drafters.md's toy drafter, as the page writes it: its file and its one registry line, registered and
run through the registry. Greedy output equals target-only on dynamic and static caches; sampled output
follows the target's exact joint law, and a planted twin whose tokens are not drawn from its q is caught."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
import torch
from engine.helpers import chi_square_p, exact_joint, sampled_joint
from tiny_models import tiny_model

from app.drafting import registry as specs
from app.drafting.drafts import make_drafter
from app.drafting.registry import DraftKind, register, unregister
from app.engine import DecodeParams, generate
from app.engine.static import StaticDecoder
from app.models import load_model

PAGE = Path(__file__).resolve().parents[2] / "docs" / "drafters.md"


def block(name: str) -> str:
    """The page's ```python <name> block."""
    return re.search(rf"```python {name}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S).group(1)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The page's file, importable as it names itself, and its registry line registered (then removed)."""
    (tmp_path / "toy_drafter.py").write_text(block("toy_drafter.py"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("toy_drafter", None)
    line = block("registry").strip()
    assert line.count("\n") == 0  # one line
    kind = register(eval(line, {"DraftKind": DraftKind}))
    yield importlib.import_module("toy_drafter")
    unregister(kind)
    sys.modules.pop("toy_drafter", None)


def test_the_toy_drafter_runs_through_the_registry_and_greedy_equals_target_only(toy, tiny_pair_dirs):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    drafter = make_drafter("uniform", target)
    assert isinstance(drafter, toy.UniformDrafter) and specs.kind_of("uniform").factory == "toy_drafter:build"
    ids = target.encode_chat([{"role": "user", "content": "abcabc"}])
    params = DecodeParams(gamma=4, temperature=0.0, max_new_tokens=24, seed=0)
    common = dict(stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size)
    expected = generate(target.model, ids, None, params, **common)
    got = generate(target.model, ids, drafter, params, **common)
    assert got.token_ids == expected.token_ids and any(r.drafted for r in got.rounds)
    static = StaticDecoder(target.model, min_capacity=64)
    assert static.supports(drafter) is None
    assert generate(target.model, ids, drafter, params, static=static, **common).token_ids == expected.token_ids
    live = drafter.controller(specs_profile(), flat_costs(), 8)
    assert 1 <= live.gamma() <= 8  # it describes its live controller too


def test_the_toy_drafters_output_follows_the_exact_joint_and_a_lying_twin_is_caught(toy, tiny_pair_dirs):
    target = tiny_model(vocab_size=8, layers=1, seed=0, scale=4.0)
    drafter = make_drafter("uniform", load_model(str(tiny_pair_dirs[0]), device="cpu"))
    params = DecodeParams(gamma=3, temperature=0.8)
    prompt = [3, 5, 2, 3]
    exact = exact_joint(target, prompt, params, 8)
    assert chi_square_p(sampled_joint(target, drafter, prompt, params, 8, samples=1500), exact) > 1e-3

    class Lying(toy.UniformDrafter):
        """Reports q uniform, but draws token 0 half the time: the rule's correction no longer balances."""

        def draft(self, ids, ids_list, gamma, params, vocab_size):
            x, q = super().draft(ids, ids_list, gamma, params, vocab_size)
            zero = torch.rand(gamma, generator=self.generator) < 0.5
            return torch.where(zero, torch.zeros_like(x), x), q

    assert chi_square_p(sampled_joint(target, Lying(), prompt, params, 8, samples=600), exact) < 1e-3


def specs_profile():
    from app.engine.policy import DrafterProfile

    return DrafterProfile("uniform", "uniform toy", 0.01, 0.15)


def flat_costs():
    from app.engine.policy import VerifyCosts

    return VerifyCosts((0.05,) * 9)
