"""The recording file format: round trip, tolerance of new fields, and clear messages for bad files."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.events import FinishedEvent, RoundEvent, Status, TokenEvent, TopEntries
from app.recording import FORMAT_VERSION, Recording, RecordingError, Run, Step, read, write

ROOT = Path(__file__).resolve().parents[2]


def sample_recording(rounds: int = 3) -> Recording:
    steps = []
    for r in range(rounds):
        top = TopEntries(((5, 0.5), (6, 0.25)), ((7, 0.75),), ((5, 0.9),))
        events = (
            TokenEvent(token_id=10 + r, status=Status.ACCEPTED, round=r, position=0, p=0.75, q=0.5, accept_prob=1.0,
                       text="ab"),
            TokenEvent(token_id=11, status=Status.REJECTED, round=r, position=1, p=0.125, q=0.5, accept_prob=0.25,
                       text="x"),
            TokenEvent(token_id=12, status=Status.CORRECTED, round=r, position=1, p=0.5, q=None, accept_prob=None,
                       text="é", top=top),
            RoundEvent(round=r, gamma=4, drafted=2, accepted=1, emitted=2, bonus=False, overlap=(0.875, 0.5),
                       draft_time=0.01 * r, verify_time=0.02),
        )
        steps.append(Step(0.1 * (r + 1), events))
    run = Run({"label": "speculative", "prompt": [{"role": "user", "content": "hi"}],
               "params": {"gamma": 4, "temperature": 0.7}}, 0.05, 0.03, steps,
              FinishedEvent(reason="eos", prompt_tokens=5, new_tokens=6, rounds=rounds, elapsed=0.3,
                            token_ids=(10, 11, 12)), 0.35)
    return Recording({"kind": "answer", "title": "hi"}, [run])


def test_round_trip_keeps_every_event_and_timing(tmp_path):
    rec = sample_recording()
    path = tmp_path / "a.speclens"
    write(path, rec)
    back = read(path)
    assert back.warning is None
    assert back.runs[0].steps == rec.runs[0].steps
    assert back.runs[0].finished == rec.runs[0].finished
    assert (back.runs[0].baseline, back.runs[0].baseline_t, back.runs[0].finished_t) == (0.05, 0.03, 0.35)
    assert back.runs[0].info == rec.runs[0].info
    assert back.header["version"] == list(FORMAT_VERSION) and back.kind == "answer"
    token = back.runs[0].steps[0].events[2]
    assert token.status is Status.CORRECTED and isinstance(token.top, TopEntries)


def rewrite(path: Path, edit) -> None:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [json.loads(x) for x in f]
    lines = edit(lines)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(x) + "\n" for x in lines)


def test_unknown_fields_and_line_types_of_the_same_major_version_are_ignored(tmp_path):
    path = tmp_path / "a.speclens"
    write(path, sample_recording())

    def newer_minor(lines):
        lines[0]["version"] = [FORMAT_VERSION[0], FORMAT_VERSION[1] + 3]
        for x in lines:
            if x["type"] in ("token", "round"):
                x["e"]["added_later"] = 0.42  # a field a later version adds
        return [*lines[:2], {"type": "annotation", "text": "new line type"}, *lines[2:]]

    rewrite(path, newer_minor)
    back = read(path)
    assert back.runs[0].steps == sample_recording().runs[0].steps


def test_a_newer_major_version_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "new.speclens"
    write(path, sample_recording())
    rewrite(path, lambda lines: [{**lines[0], "version": [FORMAT_VERSION[0] + 1, 0]}, *lines[1:]])
    with pytest.raises(RecordingError, match=r"newer than this SpecLens reads.*update SpecLens"):
        read(path)


@pytest.mark.parametrize("content, message", [
    (b"", "empty or not a SpecLens recording"),
    (b"plain text, not gzip\n", "not a SpecLens recording"),
    (gzip.compress(b'{"type": "header", "format": "something-else"}\n', mtime=0), "not a SpecLens recording"),
], ids=["empty", "plain-text", "other-format"])  # stable ids: xdist workers must collect the same tests
def test_foreign_files_are_refused(tmp_path, content, message):
    path = tmp_path / "x.speclens"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        read(path)


def test_a_damaged_line_names_the_line(tmp_path):
    path = tmp_path / "d.speclens"
    write(path, sample_recording())
    rewrite(path, lambda lines: [*lines[:3], {"type": "round", "run": 0, "t": 1, "e": {"round": 0}}, *lines[3:]])
    with pytest.raises(RecordingError, match="damaged at line 4"):
        read(path)


def test_corrupt_compressed_bytes_are_reported_as_damage(tmp_path):
    path = tmp_path / "c.speclens"
    write(path, sample_recording(40))
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 40):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match="damaged"):
        read(path)


def test_a_truncated_file_plays_up_to_where_it_ends(tmp_path):
    path = tmp_path / "t.speclens"
    write(path, sample_recording(40))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    back = read(path)
    steps = back.runs[0].steps
    assert 0 < len(steps) < 40
    assert steps == sample_recording(40).runs[0].steps[: len(steps)]
    assert back.runs[0].finished is None
    assert "ends early" in back.warning and f"{len(steps)} rounds" in back.warning


def test_missing_file():
    with pytest.raises(RecordingError, match="No recording at"):
        read(Path("/nonexistent/x.speclens"))


def test_the_reader_imports_without_torch_or_qt():
    code = "import sys, app.recording; print(sorted(m for m in ('torch', 'transformers', 'PySide6') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


DATA = Path(__file__).parent / "data"


def test_a_tree_run_round_trips_its_tree(tmp_path):
    """A real tree run (draft-model tree + lookup trie), written and read back field for field."""
    import torch
    from tiny_models import noisy_copy, tiny_model

    from app.engine import DecodeParams, generate
    from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter

    target = tiny_model()
    draft = noisy_copy(target, 1.5)
    drafter = UnionTreeDrafter(ModelTreeDrafter(draft, budget=6, depth=3, top_k=3), LookupTreeDrafter(budget=3))
    result = generate(target, torch.tensor([0, 5, 9, 3, 17, 5, 9]), drafter,
                      DecodeParams(gamma=3, temperature=1.0, max_new_tokens=24, seed=1))
    by_round: dict[int, list] = {}
    for t in result.tokens + result.rejected:
        by_round.setdefault(t.round, []).append(t)
    steps = [Step(0.01 * (r.round + 1), (*sorted(by_round.get(r.round, []), key=lambda t: t.position), r))
             for r in result.rounds]
    rec = Recording({"kind": "answer", "title": "tree"}, [Run({"label": "tree"}, None, 0.0, steps, result.finished, 1.0)])
    write(tmp_path / "tree.speclens", rec)
    back = read(tmp_path / "tree.speclens").runs[0]
    assert back.steps == steps
    rounds = [s.round for s in back.steps]
    assert any(r.tree_path for r in rounds) and all(r.tree_tokens for r in rounds[1:])
    assert any(e.node is not None for s in back.steps for e in s.events[:-1])


def test_a_format_1_0_recording_still_reads_and_replays(tmp_path):
    """tests/recording/data/format-1.0.speclens was written by SpecLens before token trees (format 1.0,
    a chain run on the tiny test model): it reads, its rounds carry no tree, and it replays headless."""
    rec = read(DATA / "format-1.0.speclens")
    assert rec.header["version"] == [1, 0] and rec.warning is None
    run = rec.runs[0]
    assert run.finished is not None and len(run.steps) == run.finished.rounds == 7
    assert sum(s.round.emitted for s in run.steps) == run.finished.new_tokens
    for step in run.steps:
        r = step.round
        assert r.tree_nodes == 0 and r.tree_path == () and r.drafts and len(r.u) >= 1
        assert all(e.node is None for e in step.events[:-1])
    emitted = [e.token_id for s in run.steps for e in s.events[:-1] if e.emitted]
    assert tuple(emitted) == run.finished.token_ids
    # Written again it becomes a 1.1 file that reads back equal.
    write(tmp_path / "again.speclens", rec)
    again = read(tmp_path / "again.speclens")
    assert again.header["version"] == list(FORMAT_VERSION) and again.runs[0].steps == run.steps
