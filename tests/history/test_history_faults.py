"""Fault campaign for the history: SIGKILL in the middle of writes, a full disk, two processes at once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.history import HistoryError, HistoryStore, StoredToken

REPO = Path(__file__).resolve().parents[2]
TOKENS = [StoredToken(i, f"t{i}", "accepted", i // 4, 0.5, 0.4, 0.8) for i in range(200)]

# Writes messages as fast as it can and prints each id once its transaction has committed.
WRITER = """
    import sys
    from app.history import HistoryStore, StoredToken
    path, convs, tag, count = sys.argv[1], sys.argv[2].split(","), sys.argv[3], int(sys.argv[4])
    tokens = [StoredToken(i, f"t{i}", "accepted", i // 4, 0.5, 0.4, 0.8) for i in range(200)]
    store = HistoryStore(path)
    print("ready", flush=True)
    for n in range(count):
        message_id = store.add_message(int(convs[n % len(convs)]), "assistant", f"{tag} {n} " + "x" * 2000, tokens, {"n": n})
        sys.stdout.write(f"{message_id} {n}\\n")  # one write: print's pieces are separate writes under -u
        sys.stdout.flush()
"""


def writer(path: Path, convs: list[int], tag: str, count: int = 100_000) -> subprocess.Popen:
    """Writes into convs in turn."""
    args = [str(path), ",".join(map(str, convs)), tag, str(count)]
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), *args],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def intact(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]


@pytest.mark.parametrize("commits_before_kill", [1, 7, 40])
def test_kill_9_during_writes_keeps_every_committed_message(tmp_path, commits_before_kill):
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        conv = store.create_conversation("Under fire")
        store.add_message(conv, "user", "written before the writer started")
    proc = writer(path, [conv], "w")
    assert proc.stdout.readline().strip() == "ready"
    committed = [proc.stdout.readline().split() for _ in range(commits_before_kill)]
    os.kill(proc.pid, signal.SIGKILL)  # somewhere inside the next add_message
    proc.wait(timeout=60)
    more = proc.stdout.read()  # the buffered reader's read-ahead too (communicate() would skip it)
    # committed before the kill landed; a line the kill cut short (no newline) is not counted
    committed += [line.split() for line in more.splitlines(keepends=True) if line.endswith("\n")]
    assert proc.returncode == -signal.SIGKILL
    assert intact(path) == ["ok"]
    with HistoryStore(path) as store:
        messages = store.messages(conv)
    assert messages[0].content == "written before the writer started"
    written = {m.id: m for m in messages[1:]}
    for message_id, n in committed:
        m = written[int(message_id)]
        assert m.content == f"w {n} " + "x" * 2000 and m.tokens == tuple(TOKENS) and m.stats == {"n": int(n)}
    assert len(written) - len(committed) in (0, 1)  # at most the commit whose "printed" line the kill cut


def fill_the_disk(store: HistoryStore) -> None:
    """SQLite reports ENOSPC as SQLITE_FULL ("database or disk is full"); capping the page count at the
    current size produces exactly that error on the next write that needs a page."""
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_is_a_clear_error_that_loses_nothing_and_recovers(tmp_path):
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        conv = store.create_conversation("Nearly full")
        before = [store.add_message(conv, "user", f"saved {i}", TOKENS[:20], {"i": i}) for i in range(5)]
        fill_the_disk(store)
        with pytest.raises(HistoryError) as info:
            store.add_message(conv, "assistant", "y" * 200_000, TOKENS)
        message = str(info.value)
        assert "disk" in message and "full" in message and "not saved" in message
        assert "\n" not in message
        assert [m.id for m in store.messages(conv)] == before  # the failed write left no trace
        store._conn.execute("PRAGMA max_page_count = 1073741823")  # space freed
        store.add_message(conv, "assistant", "saved again")
    assert intact(path) == ["ok"]
    with HistoryStore(path) as store:
        assert [m.content for m in store.messages(conv)] == [f"saved {i}" for i in range(5)] + ["saved again"]


def test_two_processes_writing_one_history_lose_nothing(tmp_path):
    """Two SpecLens processes on one database, writing at the same time, each into its own chat and both
    into a shared one: WAL plus the busy timeout serialise the commits; nothing is lost or reordered."""
    path = tmp_path / "history.sqlite3"
    count = 60
    with HistoryStore(path) as store:
        shared = store.create_conversation("shared")
        own = {tag: store.create_conversation(f"own {tag}") for tag in "ab"}
    procs = {tag: writer(path, [own[tag], shared], tag, count) for tag in "ab"}
    for proc in procs.values():
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert intact(path) == ["ok"]
    with HistoryStore(path) as store:
        in_shared = [m.content.split()[:2] for m in store.messages(shared)]
        for tag in "ab":
            assert [m.content.split()[:2] for m in store.messages(own[tag])] == [[tag, str(n)]
                                                                                 for n in range(0, count, 2)]
            assert [x for x in in_shared if x[0] == tag] == [[tag, str(n)] for n in range(1, count, 2)]
        assert len(in_shared) == count
