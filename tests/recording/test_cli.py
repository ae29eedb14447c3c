"""`speclens record` and `speclens replay` from the command line."""

from __future__ import annotations

import pytest

from app.cli import main
from app.recording import read


def test_record_writes_a_playable_recording(tiny_pair_dirs, tmp_path, capsys):
    target, draft = tiny_pair_dirs
    out = tmp_path / "demo.speclens"
    code = main(["record", "--prompt", "abc", "--target", str(target), "--draft", str(draft),
                 "--max-new-tokens", "24", "--temperature", "1", "--seed", "2", "--out", str(out)])
    assert code == 0
    rec = read(out)
    run = rec.runs[0]
    assert rec.warning is None and rec.kind == "answer"
    assert run.baseline and run.finished is not None and run.finished.new_tokens > 0
    assert sum(s.round.emitted for s in run.steps) == run.finished.new_tokens
    assert run.info["params"]["seed"] == 2 and run.info["draft"]["fingerprint"] != run.info["target"]["fingerprint"]
    assert [s.t for s in run.steps] == sorted(s.t for s in run.steps)


def test_bad_arguments_and_files_get_one_line(tmp_path, capsys):
    assert main(["record", "--prompt", "x", "--out", str(tmp_path / "demo.txt")]) == 2
    assert "must end in .speclens" in capsys.readouterr().err
    bad = tmp_path / "bad.speclens"
    bad.write_bytes(b"\x1f\x8b broken")
    assert main(["replay", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("speclens replay: error: bad.speclens") and "\n" not in err


def test_record_with_a_tree_writes_its_rounds(tiny_pair_dirs, tmp_path):
    target, draft = tiny_pair_dirs
    out = tmp_path / "tree.speclens"
    assert main(["record", "--prompt", "abcabc", "--target", str(target), "--draft", str(draft), "--gamma", "3",
                 "--tree", "on", "--tree-nodes", "5", "--max-new-tokens", "16", "--temperature", "0",
                 "--baseline-steps", "0", "--out", str(out)]) == 0
    rounds = [s.round for s in read(out).runs[0].steps]
    assert all(0 < r.tree_nodes <= 5 for r in rounds) and any(r.tree_path for r in rounds)
    with pytest.raises(SystemExit):  # argparse: one line, exit 2
        main(["record", "--prompt", "x", "--target", str(target), "--tree-nodes", "0", "--out", str(out)])
