"""History errors carry a complete, user-facing sentence; the GUI shows str(error) as is."""

from __future__ import annotations

from pathlib import Path


class HistoryError(Exception):
    """Base class. `path` is the database file concerned, when there is one."""

    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.path = path


class HistoryUnreadable(HistoryError):
    """The file is corrupt or not a SpecLens history; HistoryStore.quarantine(path) moves it aside."""


class HistoryTooNew(HistoryError):
    """Written by a newer SpecLens: left untouched, the user should upgrade rather than move it aside."""


class NotFound(HistoryError):
    """A conversation or message id that does not exist (any more)."""
