"""What must hold for users' chats across processes, crashes, damage and upgrades."""

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.history import HistoryError, HistoryStore, HistoryTooNew, HistoryUnreadable, StoredToken
from app.history.schema import SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter, as a second SpecLens process would."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_conversation_written_by_another_process_survives_the_restart(tmp_path):
    path = tmp_path / "history.sqlite3"
    done = run_python(
        """
        import sys
        from app.history import HistoryStore, StoredToken
        store = HistoryStore(sys.argv[1])
        conv = store.create_conversation("Written elsewhere", "sys")
        store.add_message(conv, "user", "Grüße 🙂")
        store.add_message(conv, "assistant", "ok", [StoredToken(1, "ok", "bonus", 0, 0.5, None, None)], {"alpha": 0.5})
        store.close()
        """,
        str(path),
    )
    assert done.returncode == 0, done.stderr
    with HistoryStore(path) as store:
        (info,) = store.list_conversations()
        assert (info.title, info.system_prompt, info.message_count) == ("Written elsewhere", "sys", 2)
        user, answer = store.messages(info.id)
        assert user.content == "Grüße 🙂"
        assert answer.tokens == (StoredToken(1, "ok", "bonus", 0, 0.5, None, None),)
        assert answer.stats == {"alpha": 0.5}


def test_another_process_reads_what_this_one_wrote_while_it_is_still_open(tmp_path):
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        conv = store.create_conversation("Written here")
        store.add_message(conv, "user", "still open")
        read = run_python(
            """
            import sys
            from app.history import HistoryStore
            store = HistoryStore(sys.argv[1])
            (info,) = store.list_conversations()
            print(info.title, "|", store.messages(info.id)[0].content)
            """,
            str(path),
        )
        assert read.returncode == 0, read.stderr
        assert read.stdout.strip() == "Written here | still open"


def test_a_process_killed_mid_write_loses_only_that_write(tmp_path):
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        conv = store.create_conversation("Precious")
        store.add_message(conv, "user", "committed before the crash")
    crashed = run_python(
        """
        import os, sys
        from app.history import HistoryStore
        store = HistoryStore(sys.argv[1])
        conn = store._conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM messages")
        conn.execute("UPDATE conversations SET title = 'half-written'")
        os._exit(9)  # no commit, no close: as if the app were killed
        """,
        str(path),
    )
    assert crashed.returncode == 9, crashed.stderr
    with HistoryStore(path) as store:
        (info,) = store.list_conversations()
        assert info.title == "Precious"
        assert [m.content for m in store.messages(info.id)] == ["committed before the crash"]


def test_a_newer_schema_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        store.create_conversation("From the future")
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    before = path.read_bytes()
    with pytest.raises(HistoryTooNew, match="newer SpecLens") as err:
        HistoryStore(path)
    assert err.value.path == path
    assert path.read_bytes() == before


def test_a_corrupt_file_is_refused_kept_and_can_be_quarantined(tmp_path):
    path = tmp_path / "history.sqlite3"
    path.write_bytes(b"this is not an SQLite database, but somebody's chats might be in it" * 100)
    before = path.read_bytes()
    with pytest.raises(HistoryUnreadable, match="damaged or not a database"):
        HistoryStore(path)
    assert path.read_bytes() == before

    moved = HistoryStore.quarantine(path)
    assert moved.name.startswith("history.sqlite3.corrupt-")
    assert moved.read_bytes() == before
    assert not path.exists()
    with HistoryStore(path) as fresh:  # a new history starts where the old one was
        assert fresh.list_conversations() == []
    assert HistoryStore.quarantine(path) != moved  # a second quarantine in the same second does not overwrite


def test_a_damaged_page_is_detected_at_open(tmp_path):
    path = tmp_path / "history.sqlite3"
    with HistoryStore(path) as store:
        conv = store.create_conversation()
        for i in range(200):
            store.add_message(
                conv, "assistant", f"answer {i} " * 50, [StoredToken(i, "t", "accepted", 0, 0.5, 0.5, 1.0)]
            )
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    assert len(data) > 4 * page_size
    data[2 * page_size : 4 * page_size] = b"\xa5" * (2 * page_size)  # overwrite two b-tree pages
    path.write_bytes(bytes(data))
    with pytest.raises(HistoryUnreadable):
        HistoryStore(path)


def test_quarantine_moves_the_wal_with_the_database(tmp_path):
    path = tmp_path / "history.sqlite3"
    path.write_bytes(b"garbage")
    wal = path.with_name(path.name + "-wal")
    wal.write_bytes(b"frames that belong to the old file")
    moved = HistoryStore.quarantine(path)
    assert not wal.exists()
    assert moved.with_name(moved.name + "-wal").read_bytes() == b"frames that belong to the old file"


def test_a_foreign_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "history.sqlite3"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY)")
    raw.commit()
    raw.close()
    before = path.read_bytes()
    with pytest.raises(HistoryUnreadable, match="not a SpecLens history"):
        HistoryStore(path)
    assert path.read_bytes() == before


def test_an_unopenable_path_is_a_history_error(tmp_path):
    (tmp_path / "history.sqlite3").mkdir()
    with pytest.raises(HistoryError, match="Cannot open|could not be used"):
        HistoryStore(tmp_path / "history.sqlite3")
