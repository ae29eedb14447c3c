"""Prompt lookup never proposes the special tokens a chat template places (issue #28: `<|im_start|>` showed
struck through at the start of answers). Each test shows the plain drafter proposing one on the same prompt."""

from __future__ import annotations

import torch

from app.drafting.drafts import make_drafter, template_tokens
from app.engine import DecodeParams, PromptLookupDrafter, generate
from app.models import load_model


def proposals(drafter, ids: list[int], gamma: int = 8) -> set[int]:
    """Every token the drafter would propose at each prefix of ids (the chain and the trie alike)."""
    seen: set[int] = set()
    for end in range(2, len(ids) + 1):
        seen.update(drafter.propose(ids[:end], gamma))
    return seen


def two_turns(target) -> list[int]:
    return target.encode_chat([{"role": "user", "content": "say hi"}, {"role": "assistant", "content": "hi"},
                               {"role": "user", "content": "say hi"}]).tolist()


def test_the_tiny_template_tokens_are_never_proposed(tiny_pair_dirs):
    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    placed = template_tokens(target)
    assert placed == {target.tokenizer.bos_token_id, target.tokenizer.eos_token_id}
    ids = two_turns(target)
    assert proposals(PromptLookupDrafter(), ids) & placed  # the plain drafter proposes them here
    lookup = make_drafter("prompt-lookup", target)
    assert not proposals(lookup, ids) & placed
    tree = lookup.tree_form(16, 6)
    trie = tree.draft_tree(torch.tensor(ids), ids, 6, DecodeParams(), target.vocab_size)
    assert trie.tokens and not set(trie.tokens) & placed
    # Still exact: greedy equals target-only greedy, and no round drafted a template token.
    params = DecodeParams(gamma=6, temperature=0, max_new_tokens=24, seed=0)
    got = generate(target.model, torch.tensor(ids), lookup, params, vocab_size=target.vocab_size)
    expected = generate(target.model, torch.tensor(ids), None, params, vocab_size=target.vocab_size)
    assert got.token_ids == expected.token_ids
    assert not {t for r in got.rounds for t in r.drafts} & placed


def test_the_embedded_template_tokens_are_never_proposed(default_target):
    target = default_target
    placed = template_tokens(target)
    start = target.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert start in placed and target.tokenizer.convert_tokens_to_ids("<|im_end|>") in placed
    ids = two_turns(target)
    assert start in proposals(PromptLookupDrafter(), ids)
    lookup = make_drafter("prompt-lookup", target)
    assert not proposals(lookup, ids) & placed
    params = DecodeParams(gamma=8, temperature=0, max_new_tokens=24, seed=0)
    got = generate(target.model, torch.tensor(ids), lookup, params, stop_token_ids=target.stop_token_ids,
                   vocab_size=target.vocab_size)
    assert not {t for r in got.rounds for t in r.drafts} & placed
