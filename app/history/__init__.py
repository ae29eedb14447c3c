"""Conversation history: a WAL SQLite store, its records, and HTML/Markdown exports. No Qt here."""

from .errors import HistoryError, HistoryTooNew, HistoryUnreadable, NotFound
from .export import to_html, to_markdown
from .palette import STATUSES, STYLES, TokenStyle
from .records import ROLES, ConversationInfo, StoredMessage, StoredToken
from .store import HistoryStore

__all__ = [
    "ROLES",
    "STATUSES",
    "STYLES",
    "ConversationInfo",
    "HistoryError",
    "HistoryStore",
    "HistoryTooNew",
    "HistoryUnreadable",
    "NotFound",
    "StoredMessage",
    "StoredToken",
    "TokenStyle",
    "to_html",
    "to_markdown",
]
