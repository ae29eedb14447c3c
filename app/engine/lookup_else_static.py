"""LookupElseDrafter on static caches: the draft's static form, skipped in rounds the lookup proposes (it
catches up on the positions it missed at its next draft)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .protocols import LookupElse, StaticBuffers, StaticDraft


class StaticLookupElse:
    def __init__(self, drafter: LookupElse, form: StaticDraft) -> None:
        self.drafter, self.form = drafter, form
        self.models = form.models

    def prepare(self, buffers: StaticBuffers, prompt_len: int) -> None:
        self.form.prepare(buffers, prompt_len)

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        chosen = self.drafter.choose(ids.device, ids_list, gamma, vocab_size)
        if chosen is not None:
            return chosen
        return self.form.draft(ids, ids_list, min(gamma, self.drafter.draft_gamma), params, vocab_size)

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        self.form.commit(kept, features, start)
