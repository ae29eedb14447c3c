"""Answers served over HTTP, saved into the history as conversations the window can open (`--history on`).

An EngineHost observer: each finished answer becomes one conversation holding the request's turns and
the answer with every token's status, in the same record shape the window writes. The store is opened
in the engine's worker thread, where the observer runs (a store belongs to the thread that opened it).
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.engine import TokenEvent
from app.history import HistoryError, HistoryStore, StoredToken

from .host import Answer, Done, EngineHost, Item, Step

log = logging.getLogger(__name__)
TITLE_CHARS = 60  # as the window titles a new chat


class HistorySink:
    def __init__(self, host: EngineHost, path: Path | None = None) -> None:
        self.host = host
        self.path = path
        self._store: HistoryStore | None = None
        self._tokens: dict[str, list[TokenEvent]] = {}
        self.saved: list[int] = []  # conversation ids written, in order

    def __call__(self, answer: Answer, item: Item) -> None:
        if isinstance(item, Step):
            self._tokens.setdefault(answer.id, []).extend(e for e in item.events if isinstance(e, TokenEvent))
            return
        tokens = self._tokens.pop(answer.id, [])
        if item.finished is None and item.error is None:  # never ran: nothing to keep
            return
        try:
            self.saved.append(self._save(answer, item, tokens))
        except HistoryError as exc:  # a full disk must not stop the server
            log.warning("the answer was not saved: %s", exc)

    def _save(self, answer: Answer, done: Done, tokens: list[TokenEvent]) -> int:
        if self._store is None:
            self._store = HistoryStore(self.path)
        store, pair, job = self._store, self.host.pair, answer.job
        turns = [m for m in job.messages if m["role"] != "system"]
        system = "\n\n".join(m["content"] for m in job.messages if m["role"] == "system")
        last_user = next((m["content"] for m in reversed(turns) if m["role"] == "user"), "API answer")
        conv = store.create_conversation(" ".join(last_user.split())[:TITLE_CHARS], system)
        for m in turns:
            store.add_message(conv, m["role"], m["content"])
        u, p = done.usage, job.params
        stats = {
            "source": "api", "target": pair.target.name, "draft": u["drafter"],
            "new_tokens": done.completion_tokens, "seconds": done.finished.elapsed if done.finished else 0.0,
            "alpha": u["alpha"], "gamma": u["gamma"], "histogram": u["histogram"],
            "rounds": [[r.drafted, r.accepted, r.emitted, int(r.bonus)] for r in done.rounds],
            "round_timing": [[r.gamma, r.draft_time, r.verify_time, list(r.overlap)] for r in done.rounds],
            "baseline_step": u["baseline_step_seconds"], "speedup": u["measured_speedup"],
            "predicted_speedup": u["predicted_speedup"], "finish_reason": done.finish_reason,
            "temperature": p.temperature, "top_k": p.top_k, "top_p": p.top_p, "seed": p.seed,
        }
        if done.error is not None:
            stats["error"] = done.error
        stored = [StoredToken.from_event(t) for t in tokens]
        store.add_message(conv, "assistant", done.text, stored, stats, partial=done.finish_reason in ("cancelled", "error"))
        return conv

    def close(self) -> None:
        """From the worker thread's side: call after the host has stopped."""
        self._store = None  # sqlite3 refuses close() from another thread; the connection closes with it
