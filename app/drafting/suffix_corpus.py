"""Suffix decoding for a loaded target (app/engine/suffix_drafter.py): its index over a corpus of the
embedded model's own answers (resources/suffix/answers.json, held-out prompts never among them) and the
user's earlier exchanges (app/history/corpus.py), each chat-templated and tokenized for this target. Built
once a process for a target (about a second) and whenever the history grew since."""

from __future__ import annotations

import json

from app.drafting.drafts import template_tokens
from app.drafting.registry import SUFFIX
from app.engine.suffix_drafter import SuffixDrafter
from app.engine.suffix_index import SuffixIndex
from app.history.corpus import recent_exchanges
from app.models.loading import LoadedModel
from app.paths import resource_path

START_ALPHA = 0.4  # a suffix match's acceptance before its own rounds teach it (per-round lookup's is measured)


def corpus() -> list[tuple[str, str]]:
    chats = json.loads(resource_path("suffix", "answers.json").read_text(encoding="utf-8"))["chats"]
    return [(c["prompt"], c["answer"]) for c in chats]


_BUILT: dict[tuple[int, tuple], SuffixIndex] = {}  # (target, its history) -> index: one per target at a time


def index_for(target: LoadedModel) -> SuffixIndex:
    history = tuple(recent_exchanges())
    key = (id(target), history)
    if key not in _BUILT:
        _BUILT.clear()
        _BUILT[key] = _index(target, history)
    return _BUILT[key]


def _index(target: LoadedModel, history: tuple[tuple[str, str], ...]) -> SuffixIndex:
    sequences = []
    for prompt, answer in [*corpus(), *history]:
        ids = target.encode_chat([{"role": "user", "content": prompt}]).tolist() if prompt else []
        ids += target.tokenizer(answer, add_special_tokens=False)["input_ids"]
        sequences.append(ids)
    return SuffixIndex(sequences)


def suffix_drafter(spec: str, target: LoadedModel, verify=None, alpha: float | None = None,
                   **load_kwargs) -> SuffixDrafter:
    """The registry's factory (spec "suffix"), and auto's per-round lookup where it builds one: prompt lookup
    over the context and the index, at the verify costs and lookup α measured for the target (flat costs and
    START_ALPHA before any measurement; its controller re-prices it at load)."""
    from app.engine.policy import VerifyCosts

    costs = verify or VerifyCosts((1.0,))
    return SuffixDrafter(costs, START_ALPHA if alpha is None else alpha, index_for(target),
                         never=template_tokens(target))


__all__ = ["SUFFIX", "suffix_drafter", "index_for"]
