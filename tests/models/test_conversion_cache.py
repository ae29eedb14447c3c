"""The conversion cache's key follows the GGUF's whole content, and its hash memo only saves time."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

from app.native import conversion_cache
from app.paths import user_cache_dir

MIB = 2**20
HOUR_NS = 3600 * 10**9


def _head_and_tail_key(path) -> str:
    """The old key (size, first and last MiB), kept here to show what it missed."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as f:
        digest.update(f.read(MIB))
        f.seek(max(MIB, size - MIB))
        digest.update(f.read(MIB))
    return digest.hexdigest()


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(np.random.default_rng(0).bytes(3 * MIB))
    return path


def _age(path, ns: int = HOUR_NS) -> None:
    """Set the file's times `ns` in the past: written long enough ago for its hash to be remembered."""
    then = path.stat().st_mtime_ns - ns
    os.utime(path, ns=(then, then))


def _counted(monkeypatch) -> list:
    calls = []
    real = conversion_cache._content_hash
    monkeypatch.setattr(conversion_cache, "_content_hash", lambda path: calls.append(path) or real(path))
    return calls


def test_a_same_size_edit_in_the_middle_changes_the_key(gguf):
    """Planted twin: the head-and-tail key is blind to this edit, and served the old weights."""
    old_key, before = _head_and_tail_key(gguf), conversion_cache.fingerprint(gguf)
    stale = conversion_cache.entry_dir(gguf)
    stale.mkdir(parents=True)
    (stale / conversion_cache.COMPLETE_MARKER).write_text("model.gguf")
    assert conversion_cache.lookup(gguf) == stale
    with gguf.open("r+b") as f:  # in place: same size, same inode
        f.seek(3 * MIB // 2)
        byte = f.read(1)
        f.seek(3 * MIB // 2)
        f.write(bytes([byte[0] ^ 1]))
    assert _head_and_tail_key(gguf) == old_key
    assert conversion_cache.fingerprint(gguf) != before
    assert conversion_cache.lookup(gguf) is None


def test_an_unchanged_file_is_read_once_and_a_touched_one_again(gguf, monkeypatch):
    calls = _counted(monkeypatch)
    _age(gguf)
    first = conversion_cache.fingerprint(gguf)
    assert conversion_cache.fingerprint(gguf) == first and conversion_cache.lookup(gguf) is None
    assert len(calls) == 1
    _age(gguf, 10**9)  # a touch: same bytes, another mtime
    assert conversion_cache.fingerprint(gguf) == first and len(calls) == 2


def test_a_file_written_just_now_is_not_remembered(gguf, monkeypatch):
    """Within its mtime's granularity a file can change again unseen by stat, so its hash is not kept."""
    calls = _counted(monkeypatch)
    conversion_cache.fingerprint(gguf)
    conversion_cache.fingerprint(gguf)
    assert len(calls) == 2


def test_a_file_dated_in_the_future_is_remembered(gguf, monkeypatch):
    """Clock skew or an archive's dates: no write of now can give it the same mtime, so its hash is kept."""
    calls = _counted(monkeypatch)
    _age(gguf, -HOUR_NS)
    assert conversion_cache.fingerprint(gguf) == conversion_cache.fingerprint(gguf) and len(calls) == 1


@pytest.mark.parametrize("memo", [b"\xff\xfe", b"{not json", b"[1, 2]", b"[" * 100_000, b'{"x": 5}',
                                  b'{"%s": {"stat": "odd", "fingerprint": 7}}'])
def test_a_corrupt_memo_is_survived_and_rebuilt(gguf, memo):
    _age(gguf)
    expected = conversion_cache.fingerprint(gguf)
    path = user_cache_dir() / "converted" / conversion_cache.MEMO
    path.write_bytes(memo.replace(b"%s", str(gguf.resolve()).encode()))
    assert conversion_cache.fingerprint(gguf) == expected
    rebuilt = json.loads(path.read_text())
    assert rebuilt[str(gguf.resolve())]["fingerprint"] == expected


def test_an_unwritable_memo_is_not_fatal(gguf, monkeypatch):
    _age(gguf)
    calls = _counted(monkeypatch)
    (user_cache_dir() / "converted" / conversion_cache.MEMO).mkdir(parents=True)  # a folder where the file goes
    assert conversion_cache.fingerprint(gguf) == conversion_cache.fingerprint(gguf)
    assert len(calls) == 2 and not any(p.name.startswith(".memo-") for p in (user_cache_dir() / "converted").iterdir())


def test_the_memo_keeps_the_files_hashed_last(tmp_path, monkeypatch):
    monkeypatch.setattr(conversion_cache, "MEMO_FILES", 3)
    files = []
    for i in range(5):
        path = tmp_path / f"m{i}.gguf"
        path.write_bytes(bytes([i]) * 100)
        _age(path)
        conversion_cache.fingerprint(path)
        files.append(str(path.resolve()))
    memo = json.loads((user_cache_dir() / "converted" / conversion_cache.MEMO).read_text())
    assert list(memo) == files[2:]
