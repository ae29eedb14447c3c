"""A plain tree decoding loop for the tests, until the round runner takes tree rounds: draft a tree,
verify it in one pass, accept with the one-hot rule, compact, repeat."""

from __future__ import annotations

import torch

from app.engine.kv import new_cache
from app.engine.sampling import DecodeParams
from app.engine.tree_accept import accept_tree
from app.engine.tree_verify import compact, verify_tree


def tree_generate(target, drafter, prompt: list[int], params: DecodeParams, vocab_size: int, seed: int = 0,
                  rounds: list | None = None) -> list[int]:
    """The first params.max_new_tokens tokens (no stop tokens); `rounds` collects (tree, verdict) per round."""
    generator = torch.Generator().manual_seed(seed)
    cache = new_cache(target)
    ids_list = list(prompt)
    ids = torch.tensor(ids_list)
    out: list[int] = []
    drafter.begin()
    while len(out) < params.max_new_tokens:
        tree = drafter.draft_tree(ids, ids_list, params, vocab_size)
        p = verify_tree(target, cache, ids, tree, params, vocab_size)
        verdict = accept_tree(p, tree, generator, params.greedy)
        past_len = len(ids_list)
        compact(cache, past_len, verdict.path)
        drafter.rollback(past_len + len(verdict.path))
        new = [tree.tokens[i] for i in verdict.path] + [verdict.next_token]
        out.extend(new)
        ids_list.extend(new)
        ids = torch.cat([ids, torch.tensor(new)])
        if rounds is not None:
            rounds.append((tree, verdict))
    return out[: params.max_new_tokens]
