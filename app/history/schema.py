"""The database schema and its migrations.

PRAGMA user_version holds the schema version, PRAGMA application_id marks the file as a
SpecLens history. MIGRATIONS[n] takes a version-n database to n + 1; each runs in one
transaction with its version bump, so an interrupted upgrade leaves the old version intact.
A new schema change is a new function appended here, never an edit to an old one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from .errors import HistoryTooNew, HistoryUnreadable

APPLICATION_ID = 0x53504C53  # "SPLS"


def _v1(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so a stale id cannot hit another chat
            title TEXT NOT NULL,
            system_prompt TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            updated REAL NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- increasing: the order of a conversation
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
            content TEXT NOT NULL,
            tokens TEXT NOT NULL DEFAULT '[]',  -- JSON, see codec.py
            stats TEXT NOT NULL DEFAULT '{}',  -- JSON object
            partial INTEGER NOT NULL DEFAULT 0 CHECK (partial IN (0, 1)),
            created REAL NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX messages_by_conversation ON messages (conversation_id, id)")
    conn.execute("CREATE INDEX conversations_by_update ON conversations (updated DESC, id DESC)")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1]
SCHEMA_VERSION = len(MIGRATIONS)


def check(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse, before anything writes to it, a file this version must not touch."""
    app_id, version = _header(conn)
    foreign = app_id not in (0, APPLICATION_ID) or (
        app_id == 0 and version == 0 and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    )
    if foreign:
        raise HistoryUnreadable(f"{path} is an SQLite database but not a SpecLens history.", path)
    if version > SCHEMA_VERSION:
        raise HistoryTooNew(
            f"{path} was written by a newer SpecLens (history schema {version}; this version reads up to "
            f"{SCHEMA_VERSION}). It was left untouched: update SpecLens to open it.",
            path,
        )


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the database to SCHEMA_VERSION in one transaction; a current database is only read.

    `conn` is in autocommit mode (isolation_level=None).
    """
    if _header(conn) == (APPLICATION_ID, SCHEMA_VERSION):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        check(conn, path)  # again, under the write lock: another process may have migrated meanwhile
        for step in MIGRATIONS[_header(conn)[1] :]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _header(conn: sqlite3.Connection) -> tuple[int, int]:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    return app_id, conn.execute("PRAGMA user_version").fetchone()[0]
