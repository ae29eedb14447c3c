"""The user's earlier exchanges, read-only: what suffix decoding also proposes from (a user's own chats repeat
their phrasing, their code, their lists). Never writes, never migrates, never fails a load: a missing,
locked or damaged database is simply no corpus."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.paths import user_data_dir

from .store import FILE_NAME

RECENT = 400  # the latest answers read: more adds little to the index and costs its build time


def recent_exchanges(path: Path | None = None, limit: int = RECENT) -> list[tuple[str, str]]:
    """(the user's message, the answer after it) for the latest `limit` answers, oldest first."""
    path = Path(path) if path is not None else user_data_dir() / FILE_NAME
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return []
    try:
        rows = conn.execute(
            "SELECT a.content, (SELECT u.content FROM messages u WHERE u.conversation_id = a.conversation_id"
            " AND u.id < a.id AND u.role = 'user' ORDER BY u.id DESC LIMIT 1)"
            " FROM messages a WHERE a.role = 'assistant' ORDER BY a.id DESC LIMIT ?", (limit,)).fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return [(user or "", answer) for answer, user in reversed(rows) if answer]
