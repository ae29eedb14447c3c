"""The distill data cache: generated sequences saved to a .pt file and reused by the next run."""

from __future__ import annotations

from pathlib import Path

import torch

from .data import Sequence


def load_cache(path: str | None) -> list[Sequence]:
    if not path or not Path(path).is_file():
        return []
    try:
        rows = torch.load(path, weights_only=True)
        return [Sequence(r["tokens"], r["feats"], int(r["answer_start"]), str(r["source"])) for r in rows]
    except Exception as exc:
        raise ValueError(f"the data cache {path} is unreadable ({exc}); delete it to regenerate") from exc


def save_cache(path: str, seqs: list[Sequence]) -> None:
    rows = [{"tokens": s.tokens, "feats": s.feats, "answer_start": s.answer_start, "source": s.source} for s in seqs]
    tmp = Path(path).with_suffix(".tmp")
    torch.save(rows, tmp)
    tmp.replace(path)
