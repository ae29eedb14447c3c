"""One answer's live loop (app/session/answer_loop.py), the one place every front end's rounds reach the live
γ controller and the machine check: γ from the controller only while γ is on auto, every round heard, the
timed step told, and, checked on the source, no other module outside the policy feeding a controller."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scripted_gamma import ScriptedGamma

from app.engine import DecodeParams, RoundEvent
from app.engine.drafters import PromptLookupDrafter
from app.engine.policy import AutoGamma, DrafterProfile, VerifyCosts
from app.session.answer_loop import AnswerLoop

APP = Path(__file__).resolve().parents[2] / "app"
FEEDS = ("observe", "observe_step")  # what a front end would call on a controller (or the machine check)
ALLOWED = ("engine/policy/", "session/answer_loop.py")  # the controllers themselves, and the loop
SCRIPT = [1, 3, 2, 5, 1, 4, 2, 2, 3]


@pytest.fixture(scope="module")
def tiny_target(tiny_pair_dirs):
    from app.models import load_model

    return load_model(str(tiny_pair_dirs[0]), device="cpu")


def test_gamma_is_the_controllers_only_while_gamma_is_on_auto(tiny_target):
    params = DecodeParams(gamma=6, temperature=0.0)
    auto = [True]
    loop = AnswerLoop(target=tiny_target, params=params, drafter=PromptLookupDrafter(), controller=ScriptedGamma([3]),
                      gamma_auto=lambda: auto[0])
    assert loop.params().gamma == 3  # the controller's
    auto[0] = False  # γ set by hand mid-answer: read every round
    assert loop.params().gamma == 6
    target_only = AnswerLoop(target=tiny_target, params=params, controller=ScriptedGamma([3]))
    assert target_only.params().gamma == 6 and target_only.controller is None  # no drafter: nothing to steer


def test_every_round_runs_at_the_controllers_gamma_and_reaches_it(tiny_target):
    """Run for real on the tiny target: round k is decoded at the script's γ for k (clipped only by the
    tokens left), and the controller hears every round; the timed step is told before the first."""
    script = ScriptedGamma(SCRIPT)
    loop = AnswerLoop(target=tiny_target, params=DecodeParams(temperature=0.0, max_new_tokens=40),
                      drafter=PromptLookupDrafter(), controller=script, step=0.01)
    ids = tiny_target.encode_chat([{"role": "user", "content": "abcabcabcabc"}])
    rounds = [e for e in loop.events(ids) if isinstance(e, RoundEvent)]
    assert script.rounds == len(rounds) > 5 and script.steps == [0.01]
    left = 40
    for k, r in enumerate(rounds):
        assert r.gamma == min(SCRIPT[min(k, len(SCRIPT) - 1)], left), (k, r.gamma)
        left -= r.emitted
    # the planted twin: γ by hand, the script is never read
    fixed = AnswerLoop(target=tiny_target, params=DecodeParams(gamma=2, temperature=0.0, max_new_tokens=40),
                       drafter=PromptLookupDrafter(), controller=ScriptedGamma(SCRIPT), gamma_auto=False)
    gammas = [e.gamma for e in fixed.events(ids) if isinstance(e, RoundEvent)]
    assert set(gammas[:-1]) == {2} and gammas[-1] in (1, 2)  # the last one is clipped by the tokens left


def test_a_real_controller_learns_from_the_loops_rounds(tiny_target):
    auto = AutoGamma(DrafterProfile("prompt-lookup", "prompt lookup", 0.05, 0.5), VerifyCosts((0.05,) * 9))
    loop = AnswerLoop(target=tiny_target, params=DecodeParams(temperature=0.0, max_new_tokens=30),
                      drafter=PromptLookupDrafter(), controller=auto)
    ids = tiny_target.encode_chat([{"role": "user", "content": "abcabc"}])
    rounds = [e for e in loop.events(ids) if isinstance(e, RoundEvent)]
    assert auto.rounds == len(rounds) - 1  # every round but the prefill one, which it leaves out by design


def feeders(source: str) -> list[int]:
    """Lines that call .observe( or .observe_step( on anything."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FEEDS]


def test_only_the_answer_loop_feeds_round_events_to_live_controllers():
    found = {}
    for path in APP.rglob("*.py"):
        where = path.relative_to(APP).as_posix()
        if where.startswith(ALLOWED):
            continue
        if lines := feeders(path.read_text(encoding="utf-8")):
            found[where] = lines
    assert found == {}
    # the planted twin: a front end wiring the loop itself, as five did before issue 38
    planted = "for event in decode(*args):\n    if isinstance(event, RoundEvent):\n        auto.observe(event)\n"
    assert feeders(planted) == [3]
