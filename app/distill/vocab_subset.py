"""The reduced head's vocabulary (FR-Spec): the target's most frequent output tokens, stop tokens always in."""

from __future__ import annotations

from collections import Counter

import torch


def choose_subset(cfg, target, train, val, stop_ids) -> tuple[torch.Tensor, dict]:
    """FR-Spec: the K most frequent tokens in the target's own outputs; ties and unseen tokens by id (BPE
    merge order roughly follows frequency). Stop and chat-end tokens are always in."""
    vocab = target.vocab_size
    counts: Counter[int] = Counter()
    for s in train:
        counts.update(s.tokens[s.answer_start :].tolist() if s.source != "text" else s.tokens.tolist())
    k = min(cfg.vocab_k, vocab)
    forced = sorted(t for t in stop_ids if t < vocab)
    ranked = sorted(range(vocab), key=lambda t: (-counts.get(t, 0), t))
    chosen = forced + [t for t in ranked if t not in forced][: k - len(forced)]
    ids = torch.tensor(sorted(chosen), dtype=torch.long)
    inside = set(chosen)
    val_tokens = [t for s in val for t in s.tokens[s.answer_start :].tolist()]
    covered = sum(t in inside for t in val_tokens) / len(val_tokens) if val_tokens else None
    return ids, {"validation_answer_tokens_in_subset": covered, "distinct_answer_tokens": len(counts)}


def chat_end_ids(tokenizer) -> set[int]:
    ids = set()
    for text in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"):
        i = tokenizer.convert_tokens_to_ids(text)
        if isinstance(i, int) and i >= 0 and i != tokenizer.unk_token_id:
            ids.add(i)
    return ids
