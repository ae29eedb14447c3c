"""Loading progress as data: the GUI draws it, the CLI prints a bar on stderr."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class LoadProgress:
    stage: str  # "resolve", "download", "convert", "cache", "tokenizer", "weights", "device", "done"
    fraction: float  # 0..1 within the whole load
    message: str = ""
    bytes_done: int = 0
    bytes_total: int = 0


ProgressCallback = Callable[[LoadProgress], None]


def ignore_progress(_: LoadProgress) -> None:
    pass
