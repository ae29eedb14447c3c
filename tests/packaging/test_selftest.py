"""`speclens selftest` from source, on the tiny model pair (the frozen run is in test_frozen_build)."""

from __future__ import annotations

import dataclasses

import pytest

import app.engine
from app.cli import main


@pytest.fixture(autouse=True)
def user_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))


def selftest(pair, *extra: str) -> int:
    target, draft = pair
    return main(["selftest", "--target", str(target), "--draft", str(draft), "--device", "cpu", *extra])


def test_selftest_passes_and_reports(tiny_pair_dirs, capsys):
    assert selftest(tiny_pair_dirs, "--max-new-tokens", "12") == 0
    out = capsys.readouterr().out
    assert "outputs identical: yes" in out
    assert "local server on http://127.0.0.1:" in out and "greedy answer identical" in out
    assert "alpha" in out
    assert "main window opened and closed" in out
    assert "selftest passed" in out


def test_selftest_catches_a_speculative_output_that_differs(tiny_pair_dirs, monkeypatch, capsys):
    real = app.engine.generate

    def corrupted(target, input_ids, drafter=None, params=None, **kwargs):
        result = real(target, input_ids, drafter, params, **kwargs)
        if drafter is not None:
            last = result.tokens[-1]
            result.tokens[-1] = dataclasses.replace(last, token_id=last.token_id + 1)
        return result

    monkeypatch.setattr(app.engine, "generate", corrupted)
    assert selftest(tiny_pair_dirs, "--max-new-tokens", "8") == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("speclens selftest: FAILED: greedy speculative output differs")
    assert "Traceback" not in err


def test_selftest_catches_a_server_answer_that_differs(tiny_pair_dirs, monkeypatch, capsys):
    import app.server.chunks as chunks

    real = chunks.token_json
    monkeypatch.setattr(chunks, "token_json", lambda t: real(t) | {"id": t.token_id + 1})
    assert selftest(tiny_pair_dirs, "--max-new-tokens", "8") == 1
    assert "FAILED: the local server's greedy answer differs" in capsys.readouterr().err


def test_selftest_without_a_drafter_fails_clearly(tiny_pair_dirs, capsys):
    target, _ = tiny_pair_dirs
    assert main(["selftest", "--target", str(target), "--draft", "none", "--device", "cpu"]) == 1
    assert "nothing to check" in capsys.readouterr().err


def test_selftest_with_a_missing_model_is_one_line(tmp_path, capsys):
    assert main(["selftest", "--target", str(tmp_path / "nowhere.gguf")]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("speclens selftest: error:") and "nowhere.gguf" in err
    assert "Traceback" not in err


def test_selftest_loads_every_usual_family_from_source(tmp_path, capsys):
    """The same check the frozen build runs (test_frozen_build), from source."""
    from tiny_families import FAMILIES, save_families

    save_families(tmp_path / "models")
    assert main(["selftest", "--models", str(tmp_path / "models"), "--device", "cpu", "--max-new-tokens", "6"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("model ")]
    assert [line.split(":")[0] for line in lines] == [f"model {name}" for name in sorted(FAMILIES)]
    assert all(line.endswith("outputs identical: yes") for line in lines)


def test_selftest_models_names_the_model_that_fails(tmp_path, capsys):
    from tiny_families import save_family

    save_family("qwen2", tmp_path / "models" / "qwen2")
    (tmp_path / "models" / "qwen2" / "config.json").write_text('{"model_type": "no-such-architecture"}')
    assert main(["selftest", "--models", str(tmp_path / "models"), "--device", "cpu"]) == 1
    assert "FAILED: model qwen2: " in capsys.readouterr().err
