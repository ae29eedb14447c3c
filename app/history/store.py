"""The conversation history: one SQLite file in WAL mode.

Trust rules: every write is one transaction, so a crash mid-write leaves the previous state;
a file this version cannot read safely (damaged, foreign, written by a newer SpecLens) is
refused with a HistoryError and never modified or deleted; quarantine() only renames.

Threads: a store belongs to the thread that opened it (sqlite3's default check_same_thread);
the GUI uses it from the GUI thread only. Other threads and processes open their own store on
the same file: WAL lets readers run while one writer commits, and writers wait up to
BUSY_TIMEOUT_S for each other.

Durability: synchronous=NORMAL in WAL mode. An application crash loses nothing committed; a
power cut may lose the last commits but cannot corrupt the file.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from app.paths import user_data_dir

from .codec import decode_stats, decode_tokens, encode_stats, encode_tokens
from .errors import HistoryError, HistoryUnreadable, NotFound
from .records import ROLES, ConversationInfo, StoredMessage, StoredToken
from .schema import check, migrate

FILE_NAME = "history.sqlite3"
BUSY_TIMEOUT_S = 5.0
_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_SIDE_FILES = ("-wal", "-shm", "-journal")  # belong to the database; must move with it

_CONVERSATION_COLUMNS = """c.id, c.title, c.system_prompt, c.created, c.updated,
    (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id)"""


class HistoryStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else user_data_dir() / FILE_NAME
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as e:
            raise HistoryError(f"Cannot open the history at {self.path}: {e}.", self.path) from None
        try:
            with self._guard():
                # Read-only checks first: a file that is refused must leave with every byte unchanged.
                problems = [row[0] for row in self._conn.execute("PRAGMA quick_check(3)")]
                if problems != ["ok"]:
                    raise HistoryUnreadable(f"{self.path} is damaged: {'; '.join(problems)}.", self.path)
                check(self._conn, self.path)
                self._conn.execute("PRAGMA foreign_keys = ON")
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute("PRAGMA synchronous = NORMAL")
                migrate(self._conn, self.path)
        except BaseException:
            self._conn.close()
            raise

    # Conversations

    def create_conversation(self, title: str = "New chat", system_prompt: str = "") -> int:
        title = _title(title)
        now = time.time()
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO conversations (title, system_prompt, created, updated) VALUES (?, ?, ?, ?)",
                (title, system_prompt, now, now),
            )
            return _row_id(cur)

    def conversation(self, conv_id: int) -> ConversationInfo:
        with self._guard():
            row = self._conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?", (conv_id,)
            ).fetchone()
        if row is None:
            raise _missing(conv_id)
        return ConversationInfo(*row)

    def list_conversations(self, search: str = "") -> list[ConversationInfo]:
        """Newest change first; `search` keeps titles containing it, ignoring case (Unicode-aware,
        which SQLite's LIKE is not)."""
        with self._guard():
            rows = self._conn.execute(
                f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c ORDER BY c.updated DESC, c.id DESC"
            ).fetchall()
        needle = search.strip().casefold()
        return [ConversationInfo(*row) for row in rows if needle in row[1].casefold()]

    def rename(self, conv_id: int, title: str) -> None:
        """Keeps the conversation's place in the list: a new title is not new content."""
        title = _title(title)
        with self._write() as conn:
            _require(
                conn.execute("UPDATE conversations SET title = ? WHERE id = ?", (title, conv_id)), conv_id
            )

    def set_system_prompt(self, conv_id: int, system_prompt: str) -> None:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE conversations SET system_prompt = ?, updated = ? WHERE id = ?",
                (system_prompt, time.time(), conv_id),
            )
            _require(cur, conv_id)

    def delete(self, conv_id: int) -> None:
        """The conversation and its messages (ON DELETE CASCADE)."""
        with self._write() as conn:
            _require(conn.execute("DELETE FROM conversations WHERE id = ?", (conv_id,)), conv_id)

    # Messages

    def add_message(
        self,
        conv_id: int,
        role: str,
        content: str,
        tokens: Sequence[StoredToken] = (),
        stats: dict | None = None,
        partial: bool = False,
    ) -> int:
        if role not in ROLES:
            raise ValueError(f"Unknown message role {role!r}; expected one of {', '.join(ROLES)}.")
        tokens_json, stats_json = encode_tokens(tokens), encode_stats(stats)  # fail before writing
        now = time.time()
        with self._write() as conn:
            _require(
                conn.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conv_id)), conv_id
            )
            cur = conn.execute(
                "INSERT INTO messages (conversation_id, role, content, tokens, stats, partial, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (conv_id, role, content, tokens_json, stats_json, int(partial), now),
            )
            return _row_id(cur)

    def messages(self, conv_id: int) -> list[StoredMessage]:
        """In conversation order."""
        with self._guard():
            rows = self._conn.execute(
                "SELECT id, conversation_id, role, content, tokens, stats, partial, created"
                " FROM messages WHERE conversation_id = ? ORDER BY id",
                (conv_id,),
            ).fetchall()
            if not rows:
                self.conversation(conv_id)  # an empty chat, or NotFound
        return [_message(row) for row in rows]

    def delete_from(self, conv_id: int, message_id: int) -> None:
        """Delete this message and every later one (regenerate, edit and continue)."""
        with self._write() as conn:
            found = conn.execute(
                "SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?", (message_id, conv_id)
            ).fetchone()
            if found is None:
                raise NotFound(f"Message {message_id} is not in conversation {conv_id}.", self.path)
            conn.execute("DELETE FROM messages WHERE conversation_id = ? AND id >= ?", (conv_id, message_id))
            conn.execute("UPDATE conversations SET updated = ? WHERE id = ?", (time.time(), conv_id))

    # Lifetime

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def quarantine(path: Path) -> Path:
        """Rename a refused database to <name>.corrupt-<timestamp> so a new history can start at
        `path`; returns the new name. Nothing is deleted. No store may have the file open.

        The -wal/-shm files move first: left behind, they would be replayed into the new database.
        """
        path = Path(path)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target, n = path.with_name(f"{path.name}.corrupt-{stamp}"), 1
        while any(candidate.exists() for candidate in _with_side_files(target)):
            n += 1
            target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        try:
            for source, dest in zip(_with_side_files(path)[1:], _with_side_files(target)[1:], strict=True):
                if source.exists():
                    source.rename(dest)
            path.rename(target)
        except OSError as e:
            raise HistoryError(f"Could not move {path} aside: {e}.", path) from None
        return target

    # Internals

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite failures as HistoryErrors; damage as HistoryUnreadable so the GUI offers quarantine."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise  # a bug in the caller (closed store, wrong thread), not a state of the file
        except sqlite3.Error as e:
            if (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF == sqlite3.SQLITE_FULL:
                raise HistoryError(
                    f"The disk holding {self.path} is full, so this was not saved; everything saved before is "
                    "intact. Free some space and the next messages are saved again.", self.path
                ) from None
            if getattr(e, "sqlite_errorcode", None) in _DAMAGED:
                raise HistoryUnreadable(
                    f"{self.path} is damaged or not a database ({e}).", self.path
                ) from None
            raise HistoryError(f"The history at {self.path} could not be used: {e}.", self.path) from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction; rolled back entirely on any error, including the caller's."""
        with self._guard():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise


def _title(title: str) -> str:
    title = " ".join(title.split())
    if not title:
        raise ValueError("A conversation title cannot be empty.")
    return title


def _missing(conv_id: int) -> NotFound:
    return NotFound(f"Conversation {conv_id} is not in the history (it may have been deleted).")


def _require(cur: sqlite3.Cursor, conv_id: int) -> None:
    if cur.rowcount == 0:
        raise _missing(conv_id)


def _message(row: tuple) -> StoredMessage:
    msg_id, conv_id, role, content, tokens, stats, partial, created = row
    try:
        decoded = decode_tokens(tokens), decode_stats(stats)
    except (ValueError, TypeError, IndexError, KeyError):
        # Damaged annotations (a hand edit, a bug) must not cost the text: show it uncoloured.
        decoded = (), {}
    return StoredMessage(msg_id, conv_id, role, content, *decoded, bool(partial), created)


def _with_side_files(path: Path) -> list[Path]:
    return [path] + [path.with_name(path.name + suffix) for suffix in _SIDE_FILES]


def _row_id(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just made (sqlite3 types it as optional: it is None before any INSERT)."""
    assert cur.lastrowid is not None
    return cur.lastrowid
