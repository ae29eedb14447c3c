"""The reduced head's vocabulary (FR-Spec): the target's most frequent output tokens, stop tokens always in."""

from __future__ import annotations

from collections import Counter

import torch

from app.drafting.vocab_draft import chat_end_ids, top_tokens

__all__ = ["chat_end_ids", "choose_subset"]


def choose_subset(cfg, target, train, val, stop_ids) -> tuple[torch.Tensor, dict]:
    """FR-Spec: the K most frequent tokens in the target's own outputs (vocab_draft.top_tokens: ties and
    unseen tokens by id). Stop and chat-end tokens are always in."""
    counts: Counter[int] = Counter()
    for s in train:
        counts.update(s.tokens[s.answer_start :].tolist() if s.source != "text" else s.tokens.tolist())
    chosen = top_tokens(counts, cfg.vocab_k, stop_ids, target.vocab_size)
    ids = torch.tensor(chosen, dtype=torch.long)
    inside = set(chosen)
    val_tokens = [t for s in val for t in s.tokens[s.answer_start :].tolist()]
    covered = sum(t in inside for t in val_tokens) / len(val_tokens) if val_tokens else None
    return ids, {"validation_answer_tokens_in_subset": covered, "distinct_answer_tokens": len(counts)}
