"""The JSON stored in messages.tokens and messages.stats.

A token is one array, [token_id, text, status, round, p, q, accept_prob], plus
[top_p, top_q, top_residual] on corrected tokens. Arrays rather than objects keep a
1,000-token answer near 60 kB, and the column stays readable with the sqlite3 shell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from app.engine.events import TopEntries

from .records import StoredToken


def encode_tokens(tokens: Sequence[StoredToken]) -> str:
    rows = []
    for t in tokens:
        row = [t.token_id, t.text, t.status, t.round, t.p, t.q, t.accept_prob]
        if t.top is not None:
            row += [t.top.p, t.top.q, t.top.residual]
        rows.append(row)
    return _dumps(rows)


def decode_tokens(text: str) -> tuple[StoredToken, ...]:
    tokens = []
    for row in json.loads(text):
        top = TopEntries(*(_ranked(entries) for entries in row[7:10])) if len(row) > 7 else None
        token_id, text, status, round_, p, q, accept_prob = row[:7]
        tokens.append(StoredToken(token_id, text, status, round_, p, q, accept_prob, top))
    return tuple(tokens)


def _ranked(entries: list) -> tuple[tuple[int, float], ...]:
    return tuple((int(token_id), float(prob)) for token_id, prob in entries)


def encode_stats(stats: dict | None) -> str:
    try:
        return _dumps(_finite(stats or {}))
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"Message statistics must be JSON data (numbers, strings, lists, dicts): {e}."
        ) from None


def decode_stats(text: str) -> dict:
    return json.loads(text)


def _finite(value):
    """NaN and infinities become null: a statistic that is undefined (alpha with no drafts) must
    not cost the user the message, and strict JSON has no spelling for them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _scalar(value):
    """numpy and torch scalars (a stray .sum() result) as plain numbers."""
    if hasattr(value, "item"):
        return _finite(value.item())
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_scalar)
