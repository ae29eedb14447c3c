"""Decoding parameters: plain data, no torch, so the window can show its controls before torch loads."""

from __future__ import annotations

from dataclasses import dataclass

GAMMA_LIMIT = 16  # the most drafts one round may hold: the range of the γ control (auto searches less, see policy)


@dataclass(frozen=True, slots=True)
class DecodeParams:
    gamma: int = 4  # draft length per round; 0: no drafts (a live controller that finds drafting a loss asks for it)
    temperature: float = 1.0  # 0 means greedy
    top_k: int = 0  # 0 disables
    top_p: float = 1.0  # 1 disables
    max_new_tokens: int = 256
    seed: int | None = None  # None draws a fresh seed

    def __post_init__(self) -> None:
        if not 0 <= self.gamma <= GAMMA_LIMIT:
            raise ValueError(f"gamma must be between 0 and {GAMMA_LIMIT}, got {self.gamma}")
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top-k must be >= 0 (0 disables it), got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top-p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max new tokens must be >= 1, got {self.max_new_tokens}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0
