"""`speclens calibrate`: measures the pair again and prints the profile and what changed; --show prints
the cached profile and times nothing that is cached."""

from __future__ import annotations

import pytest

from app.cli import main


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))


def test_calibrate_measures_again_and_show_prints_the_cached_profile(cache_dir, tiny_pair_dirs, capsys, monkeypatch):
    target = ["--target", str(tiny_pair_dirs[0])]
    assert main(["calibrate", *target]) == 0
    out = capsys.readouterr().out
    assert "target step:" in out and "drafter prompt lookup" in out and "changed: (nothing was cached)" in out
    assert "[quiet (load" in out  # each timing with the load it was taken under
    assert main(["calibrate", *target]) == 0
    out = capsys.readouterr().out
    assert "changed:\n" in out and "target step: " in out.split("changed:")[1]  # the old step against the new
    from app.drafting import auto as calibration

    monkeypatch.setattr(calibration, "measure_verify", lambda *a, **k: pytest.fail("--show timed the step"))
    assert main(["calibrate", "--show", *target]) == 0
    shown = capsys.readouterr().out
    assert "target step:" in shown and "drafter prompt lookup" in shown and "changed" not in shown


def test_calibrate_refuses_a_missing_target_in_one_line(cache_dir, capsys):
    assert main(["calibrate", "--target", "/no/such/model"]) == 2
    assert "no such file or directory" in capsys.readouterr().err.strip().splitlines()[-1]
