"""Draft compatibility pre-flight: exact speculative decoding needs one token->id mapping for both models.

The draft proposes ids and the target scores those same ids, so every id either model can emit must
mean the same token in both. Padded embedding rows (e.g. 152,064 vs 151,936) are not a mismatch: the
engine masks logits past the target's real vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.errors import IncompatibleModels
from app.models.rows import input_rows, output_rows

SUGGESTION = "use --draft self (a reduced-precision copy of the target) or --draft prompt-lookup"


@dataclass(frozen=True)
class Compatibility:
    compatible: bool
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    first_mismatch: tuple[int, str | None, str | None] | None = field(default=None)  # (id, target, draft)

    def explain(self) -> str:
        if self.compatible:
            return "compatible" + (f" ({'; '.join(self.notes)})" if self.notes else "")
        return "; ".join(self.problems)


def check_tokenizers(target_tok, draft_tok, *, target_rows: int, draft_rows: int) -> Compatibility:
    """Compare two tokenizers (and the models' embedding row counts) without running either model."""
    problems: list[str] = []
    notes: list[str] = []
    t_ids = {i: t for t, i in target_tok.get_vocab().items()}
    d_ids = {i: t for t, i in draft_tok.get_vocab().items()}
    mismatch = next(((i, t_ids[i], d_ids[i]) for i in sorted(t_ids.keys() & d_ids.keys()) if t_ids[i] != d_ids[i]),
                    None)
    if mismatch is not None:
        i, t, d = mismatch
        problems.append(f"the tokenizers differ: id {i} is {t!r} for the target but {d!r} for the draft")
    t_special = set(target_tok.all_special_tokens)
    d_special = set(draft_tok.all_special_tokens)
    t_vocab, d_vocab = target_tok.get_vocab(), draft_tok.get_vocab()
    for tok in sorted(t_special | d_special):
        if tok in t_vocab and tok in d_vocab and t_vocab[tok] != d_vocab[tok] and mismatch is None:
            mismatch = (t_vocab[tok], tok, draft_tok.convert_ids_to_tokens(t_vocab[tok]))
            problems.append(f"special token {tok!r} is id {t_vocab[tok]} for the target but {d_vocab[tok]} for the draft")
    for role in ("bos", "eos"):
        t_id, d_id = getattr(target_tok, f"{role}_token_id"), getattr(draft_tok, f"{role}_token_id")
        if t_id is not None and d_id is not None and t_id != d_id:
            problems.append(f"{role.upper()} differs: id {t_id} for the target, {d_id} for the draft")
    real = min(target_rows, len(target_tok))
    if draft_rows < real:
        problems.append(f"the draft has {draft_rows:,} embedding rows but the target can emit {real:,} token ids")
    elif len(target_tok) != len(draft_tok) or target_rows != draft_rows:
        notes.append(f"vocabulary {len(target_tok):,}/{target_rows:,} rows (target) vs {len(draft_tok):,}/"
                     f"{draft_rows:,} (draft); logits past {real:,} are masked")
    if bool(getattr(target_tok, "chat_template", None)) != bool(getattr(draft_tok, "chat_template", None)):
        notes.append("only one of the two has a chat template; the target's template formats the prompt")
    return Compatibility(not problems, tuple(problems), tuple(notes), mismatch)


def check_compatibility(target, draft) -> Compatibility:
    """Pre-flight for two LoadedModels."""
    return check_tokenizers(
        target.tokenizer, draft.tokenizer,
        target_rows=output_rows(target.model),
        draft_rows=input_rows(draft.model),
    )


def ensure_compatible(target, draft) -> Compatibility:
    """The raising form: IncompatibleModels naming the first mismatch and what to use instead."""
    result = check_compatibility(target, draft)
    if not result.compatible:
        raise IncompatibleModels(
            f"{draft.name} cannot draft for {target.name}: {result.explain()}. Pick a draft from the same model "
            f"family (same tokenizer), or {SUGGESTION}."
        )
    return result
