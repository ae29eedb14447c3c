"""A race of a draft as a chain against the same draft as a token tree: both runs written to one
recording, read back event for event, with the tree rounds' whole trees kept."""

from __future__ import annotations

import pytest

from app.engine import DecodeParams, ModelDrafter
from app.engine.events import RoundEvent
from app.engine.stats import round_shape
from app.engine.tree_drafters import ModelTreeDrafter
from app.models import load_model
from app.recording import Recording, read, write
from app.recording.builder import header
from app.recording.headless import record_run
from app.session.answer_loop import AnswerLoop


def test_chain_and_tree_forms_are_each_others_inverse(tiny_pair_dirs):
    draft = load_model(str(tiny_pair_dirs[1]))
    chain = ModelDrafter(draft.model, name="tiny")
    tree = chain.tree_form(6, 3)
    assert isinstance(tree, ModelTreeDrafter) and tree.name == "tiny tree" and tree.budget == 6
    back = tree.chain_form()
    assert isinstance(back, ModelDrafter) and back.model is draft.model and back.name == "tiny"
    assert chain.chain_form() is chain


def test_a_chain_against_tree_race_round_trips(tiny_pair_dirs, tmp_path):
    target = load_model(str(tiny_pair_dirs[0]))
    draft = load_model(str(tiny_pair_dirs[1]))
    chain = ModelDrafter(draft.model, name="tiny")
    turns = [{"role": "user", "content": "abcabc"}]
    params = DecodeParams(gamma=3, temperature=0.0, max_new_tokens=16, seed=0)
    runs = [record_run(AnswerLoop(target=target, drafter=d, params=params), turns, baseline_steps=0)
            for d in (chain, chain.tree_form(6, 3))]
    path = tmp_path / "race.speclens"
    write(path, Recording(header("race", "abcabc", "cpu"), runs))
    back = read(path)
    assert back.kind == "race" and back.warning is None and len(back.runs) == 2
    for run, again in zip(runs, back.runs, strict=True):
        assert again.steps == run.steps and again.finished == run.finished
    chain_rounds, tree_rounds = ([s.round for s in r.steps if isinstance(s.round, RoundEvent)] for r in back.runs)
    assert not any(r.tree_tokens for r in chain_rounds) and all(0 < r.tree_nodes <= 6 for r in tree_rounds[1:])
    assert back.runs[0].finished.token_ids == back.runs[1].finished.token_ids  # greedy: one text either way
    chain_shape, tree_shape = round_shape(chain_rounds), round_shape(tree_rounds)
    assert chain_shape.tree_nodes is None and 1 < tree_shape.tree_nodes <= 6
    assert tree_shape.verified_per_round == pytest.approx(1 + tree_shape.tree_nodes)  # every played round a tree
    drafted = [r.drafted for r in chain_rounds[1:]]
    assert chain_shape.verified_per_round == pytest.approx(1 + sum(drafted) / len(drafted))
