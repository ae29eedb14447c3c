"""Drafters: anything that proposes up to gamma tokens with the full q they were drawn from.

Interface (duck-typed, see `Drafter`): `begin()` before a new sequence, `draft(...)` per round,
`rollback(length)` after verification so no state outlives a rejection.
"""

from __future__ import annotations

from typing import Protocol

import torch
from transformers import PreTrainedModel

from .kv import forward, new_cache, rollback
from .sampling import DecodeParams, fit_vocab, logits_to_probs, sample


class Drafter(Protocol):
    name: str

    def begin(self) -> None: ...

    def draft(
        self, ids: torch.Tensor, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [L] (context, last token included) -> (tokens [g] long, q [g, V] float32), g <= gamma."""
        ...

    def rollback(self, length: int) -> None: ...


class ModelDrafter:
    """A causal LM sharing the target's vocabulary, drafting autoregressively with its own KV cache."""

    def __init__(self, model: PreTrainedModel, name: str = "draft model") -> None:
        self.model = model
        self.name = name
        self.device = next(model.parameters()).device
        self.generator = torch.Generator(device=self.device)
        self.cache = new_cache(model)

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def begin(self) -> None:
        self.cache = new_cache(self.model)

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        # Catch up on whatever the cache lacks: the whole prompt at first, then the last
        # corrected/bonus token (and the last accepted draft when all were accepted).
        step = ids[self.cache.get_seq_length() :].to(self.device)
        tokens, qs = [], []
        for _ in range(gamma):
            logits = fit_vocab(forward(self.model, self.cache, step, keep=1)[-1], vocab_size)
            q_i = logits_to_probs(logits, params)  # [V]
            x_i = sample(q_i, self.generator, params.greedy)  # []
            tokens.append(x_i)
            qs.append(q_i)
            step = x_i.view(1)
        return torch.stack(tokens), torch.stack(qs)

    def rollback(self, length: int) -> None:
        rollback(self.cache, length)


class PromptLookupDrafter:
    """Model-free drafting: continue the latest earlier occurrence of the context's last n-gram.

    q is one-hot on the proposed token; the min(1, p/q) rule keeps the output exact.
    """

    name = "prompt lookup"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def begin(self) -> None:
        pass

    def rollback(self, length: int) -> None:
        pass

    def propose(self, ids_list: list[int], gamma: int) -> list[int]:
        n_ctx = len(ids_list)
        for n in range(min(self.max_ngram, n_ctx - 1), self.min_ngram - 1, -1):
            tail = ids_list[-n:]
            # Latest match first: recent text is the likeliest to repeat.
            for start in range(n_ctx - n - 1, -1, -1):
                if ids_list[start : start + n] == tail:
                    return ids_list[start + n : start + n + gamma]
        return []

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        proposal = self.propose(ids_list, gamma)
        tokens = torch.tensor(proposal, dtype=torch.long, device=ids.device)
        q = torch.zeros(len(proposal), vocab_size, dtype=torch.float32, device=ids.device)
        q[torch.arange(len(proposal)), tokens] = 1.0
        return tokens, q
