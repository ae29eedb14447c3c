"""`speclens distill` end to end on the tiny target: files, report, listing, loading, refusal, damage."""

from __future__ import annotations

import json
import shutil
import threading

import pytest
import torch
from tiny_models import noisy_copy

from app.cli import main
from app.distill import run_distill
from app.drafting.drafts import make_drafter
from app.drafting.trained_drafts import list_trained_drafts, load_trained_draft
from app.engine import DecodeParams, generate
from app.engine.feature_drafter import FeatureDrafter
from app.errors import CorruptModel, IncompatibleModels, ModelNotFound
from app.models import load_model
from distill.helpers import tiny_config


def test_writes_draft_report_and_command(tiny_distilled):
    _, out, report = tiny_distilled
    for name in ("feature_draft.json", "model.safetensors", "report.json", "report.md"):
        assert (out / name).is_file(), name
    s = report["summary"]
    assert 0.0 <= s["alpha_greedy"] <= 1.0 and 0.0 <= s["alpha_sampled"] <= 1.0
    assert s["c"] > 0 and s["v"] > 0
    by_t = report["evaluation"]["by_temperature"]
    assert set(by_t) == {"greedy", "T=0.7"} and len(by_t["greedy"]["per_position_acceptance"]) == 4
    assert report["training"]["steps"] == 12 and report["data"]["tokens"] >= 1500
    assert json.loads((out / "report.json").read_text())["summary"] == s
    phases = [e.phase for e in report["_events"]]
    assert {"data", "train", "eval", "done"} <= set(phases)
    assert all(e.eta_s is None or e.eta_s >= 0 for e in report["_events"])


def test_evaluation_prompts_are_never_trained_on():
    from app.distill.data import builtin_prompts

    train, heldout = builtin_prompts("train"), builtin_prompts("heldout")
    assert len(train) >= 300 and len(heldout) >= 30
    assert not set(train) & set(heldout)


def test_listed_and_loaded_for_its_target(tiny_distilled):
    target_dir, out, report = tiny_distilled
    target = load_model(str(target_dir), device="cpu")
    [info] = list_trained_drafts(target, dirs=[out.parent])
    assert info.path == out and info.alpha_greedy == report["summary"]["alpha_greedy"]
    assert info.c == report["summary"]["c"]
    drafter = make_drafter(str(out), target)
    assert isinstance(drafter, FeatureDrafter)
    prompt = target.encode_chat([{"role": "user", "content": "hello there"}])
    expected = target.model.generate(prompt.view(1, -1), do_sample=False, max_new_tokens=20, eos_token_id=1,
                                     pad_token_id=1)[0, len(prompt):].tolist()
    for gamma in (1, 2, 4, 8):
        got = generate(target.model, prompt, drafter, DecodeParams(gamma=gamma, temperature=0, max_new_tokens=20),
                       stop_token_ids=(1,)).token_ids
        assert got == expected, gamma


def test_trained_spec_finds_the_draft(tiny_distilled, monkeypatch, tmp_path):
    target_dir, out, _ = tiny_distilled
    data = tmp_path / "data"
    shutil.copytree(out, data / "drafts" / "tiny")
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(data))
    target = load_model(str(target_dir), device="cpu")
    assert isinstance(make_drafter("trained", target), FeatureDrafter)
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr("app.drafting.trained_drafts.resource_path", lambda *a: tmp_path / "nothing")
    with pytest.raises(ModelNotFound, match="speclens distill"):
        make_drafter("trained", target)


def test_draft_for_another_target_is_refused(tiny_distilled, tmp_path):
    target_dir, out, _ = tiny_distilled
    other = tmp_path / "other"
    shutil.copytree(target_dir, other)
    model = load_model(str(other), device="cpu").model
    noisy_copy(model, 0.5).save_pretrained(other)
    target = load_model(str(other), device="cpu")
    with pytest.raises(IncompatibleModels, match="different target") as err:
        load_trained_draft(out, target)
    assert "\n" not in str(err.value)
    assert list_trained_drafts(target, dirs=[out.parent]) == []


@pytest.mark.parametrize("damage", ["truncated weights", "garbage config", "missing weights", "wrong shapes"])
def test_damaged_draft_gets_a_clear_error(tiny_distilled, tmp_path, damage, capsys):
    target_dir, out, _ = tiny_distilled
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    weights, config = bad / "model.safetensors", bad / "feature_draft.json"
    if damage == "truncated weights":
        weights.write_bytes(weights.read_bytes()[:200])
    elif damage == "garbage config":
        config.write_text("{not json")
    elif damage == "missing weights":
        weights.unlink()
    else:
        data = json.loads(config.read_text())
        data["intermediate_size"] += 8
        config.write_text(json.dumps(data))
    target = load_model(str(target_dir), device="cpu")
    with pytest.raises(CorruptModel, match="damaged|do not match"):
        load_trained_draft(bad, target)
    code = main(["generate", "--target", str(target_dir), "--draft", str(bad), "--prompt", "hi", "--device", "cpu",
                 "--max-new-tokens", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("speclens generate: error: ")


def test_cancel_keeps_the_best_checkpoint(tiny_pair_dirs, tmp_path):
    cancel = threading.Event()
    steps = []

    def progress(p):
        if p.phase == "train":
            steps.append(p)
            if len(steps) == 6:
                cancel.set()

    out = tmp_path / "cancelled"
    report = run_distill(tiny_config(tiny_pair_dirs[0], out, max_steps=200), progress=progress, cancel=cancel)
    assert report["cancelled"] and report["training"]["steps"] < 200
    assert (out / "model.safetensors").is_file() and (out / "report.json").is_file()
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    assert isinstance(load_trained_draft(out, target), FeatureDrafter)


def test_same_seed_same_draft(tiny_pair_dirs, tmp_path):
    """Fixed data volume and steps: the seed decides everything."""
    from safetensors.torch import load_file

    weights = []
    for name in ("a", "b"):
        cfg = tiny_config(tiny_pair_dirs[0], tmp_path / name, max_steps=4, eval_prompts=1, eval_tokens=2)
        run_distill(cfg)
        weights.append(load_file(str(tmp_path / name / "model.safetensors")))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_cli_distill_bad_input_is_one_line(capsys, tmp_path):
    assert main(["distill", "--minutes", "0"]) == 2
    assert "--minutes must be > 0" in capsys.readouterr().err
    assert main(["distill", "--target", str(tmp_path / "missing"), "--minutes", "1"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "no such file" in err
