"""A draft model over part of the vocabulary (FR-Spec, EAGLE-3's draft vocabulary): `vocab:<K>:<draft spec>`.

Its head holds the rows of S, the K tokens the TARGET emits most often in its own greedy answers (stop and
chat-end tokens always in), so a drafted token reads K head rows instead of the vocabulary's (151,936 for
the Qwen2.5 pair). Exact: q is the same transform as p over S and exactly 0 elsewhere, the draft samples
only from S, and acceptance is unchanged, so the residual max(p - q, 0) carries every token outside S
(ModelDrafter's vocab_ids, app/engine/drafters.py). Greedy drafts the argmax over S.

S is chosen by measurement: the target's greedy answers to the built-in training prompts, counted once and
kept in the machine cache (app.machine.cost_cache) under the target's fingerprint. `measure` reports α and
the draft's cost per token for a few K against the full head, on the held-out prompts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence

import torch

from app.drafting.drafts import make_drafter
from app.drafting.registry import VOCAB_PREFIX as PREFIX
from app.drafting.registry import is_vocab_spec
from app.engine import DecodeParams, ModelDrafter, generate
from app.engine.drafters import subset_head
from app.machine import cost_cache
from app.models.loading import LoadedModel
from app.native.model import is_native, with_head_rows
from app.paths import resource_path

__all__ = ["best_k", "chosen_k", "is_vocab_spec", "measure", "modelled_speedup", "over_subset", "subset_of", "target_counts", "top_tokens", "vocab_draft"]
AUTO_K = "auto"  # vocab:auto:<draft spec>: K by measurement (`chosen_k`)
CANDIDATES = (4096, 8192, 16384, 32768)  # the K `measure` tries beside the full head
COUNT_PROMPTS = 64  # the training prompts whose greedy answers are counted
COUNT_TOKENS = 96  # tokens a counted answer runs to at most
COUNTS_FORMAT = 1


def parse(spec: str) -> tuple[int | None, str]:
    """"vocab:<K>:<draft spec>" -> (K, draft spec), K None for "auto" (chosen by measurement); ValueError, in a
    line, otherwise."""
    k_text, _, inner = spec.removeprefix(PREFIX).partition(":")
    if not (k_text == AUTO_K or k_text.isdigit() and int(k_text) >= 1) or not inner:
        raise ValueError(f"draft {spec!r}: write vocab:<K>:<draft model>, K a token count or auto "
                         "(e.g. vocab:8192:<model>)")
    return (None if k_text == AUTO_K else int(k_text)), inner


def top_tokens(counts: Counter[int], k: int, forced: Iterable[int], vocab: int) -> list[int]:
    """The forced tokens, then the most frequent in counts, to K in all (ties and unseen tokens by id: BPE
    merge order roughly follows frequency), sorted by id."""
    k = min(k, vocab)
    forced = sorted({t for t in forced if 0 <= t < vocab})
    inside = set(forced)
    ranked = sorted(range(vocab), key=lambda t: (-counts.get(t, 0), t))
    chosen = forced + [t for t in ranked if t not in inside][: max(0, k - len(forced))]
    return sorted(chosen)


def chat_end_ids(tokenizer) -> set[int]:
    """The ids of the chat-end tokens a tokenizer knows (an answer's last token in a chat)."""
    ids = set()
    for text in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"):
        i = tokenizer.convert_tokens_to_ids(text)
        if isinstance(i, int) and i >= 0 and i != tokenizer.unk_token_id:
            ids.add(i)
    return ids


def forced_ids(target: LoadedModel) -> set[int]:
    """The tokens every subset holds: the target's stop tokens and its chat-end tokens."""
    return set(target.stop_token_ids) | chat_end_ids(target.tokenizer)


def read_prompts(split: str, count: int) -> list[str]:
    path = resource_path("distill", f"{split}_prompts.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")][:count]


def answer(target: LoadedModel, prompt: str, max_new_tokens: int, drafter=None, gamma: int = 1):
    """target's greedy answer to a chat prompt (through the engine: transformers' and the native path alike)."""
    ids = target.encode_chat([{"role": "user", "content": prompt}])
    params = DecodeParams(gamma=gamma, temperature=0.0, max_new_tokens=max_new_tokens, seed=0)
    return generate(target.model, ids, drafter, params, vocab_size=target.vocab_size,
                    stop_token_ids=target.stop_token_ids)


def measure_counts(target: LoadedModel, prompts: Sequence[str], max_new_tokens: int = COUNT_TOKENS) -> Counter[int]:
    """How often the target emits each token in its greedy answers to prompts."""
    counts: Counter[int] = Counter()
    for prompt in prompts:
        counts.update(answer(target, prompt, max_new_tokens).token_ids)
    return counts


def target_counts(target: LoadedModel, prompts: int | None = None, max_new_tokens: int | None = None,
                  use_cache: bool = True) -> Counter[int]:
    """The target's token counts over the first `prompts` training prompts (COUNT_PROMPTS), each answer up to
    max_new_tokens (COUNT_TOKENS), measured once and kept in the machine cache."""
    texts = read_prompts("train", COUNT_PROMPTS if prompts is None else prompts)
    max_new_tokens = COUNT_TOKENS if max_new_tokens is None else max_new_tokens
    key = cost_cache.key_of(["target-token-counts", COUNTS_FORMAT, cost_cache.model_fingerprint(target.model),
                             texts, max_new_tokens])
    stored = cost_cache.read(key) if use_cache else None
    if stored is not None and isinstance(stored.get("counts"), dict):
        return Counter({int(t): int(n) for t, n in stored["counts"].items()})
    counts = measure_counts(target, texts, max_new_tokens)
    if use_cache:
        cost_cache.write(key, {"counts": {str(t): n for t, n in counts.items()}})
    return counts


def subset_of(target: LoadedModel, k: int, counts: Counter[int] | None = None) -> torch.Tensor:
    """S: the K tokens (ids [K], sorted) of the target's measured answers, stop and chat-end tokens in."""
    counts = target_counts(target) if counts is None else counts
    return torch.tensor(top_tokens(counts, k, forced_ids(target), target.vocab_size), dtype=torch.long)


def over_subset(drafter: ModelDrafter, vocab_ids: torch.Tensor) -> ModelDrafter:
    """The same draft model with a head of S's rows only: a sliced [K, H] head on torch, a head QMatrix of S's
    rows on the native kernel."""
    if drafter.vocab_ids is not None:
        raise ValueError(f"{drafter.name} already drafts over a token subset")
    model = drafter.model
    reduced = with_head_rows(model, vocab_ids) if is_native(model) else subset_head(model, vocab_ids)
    return ModelDrafter(reduced, name=f"{drafter.name} (head over {len(vocab_ids)} tokens)", vocab_ids=vocab_ids)


def vocab_draft(spec: str, target: LoadedModel, **load_kwargs) -> ModelDrafter:
    """The registry's factory for `vocab:<K>:<draft spec>`: the draft the inner spec names (a model, "self"),
    its head cut to the target's K most frequent tokens."""
    k, inner = parse(spec)
    chain = make_drafter(inner, target, **load_kwargs)
    if not isinstance(chain, ModelDrafter):
        raise ValueError(f"draft {spec!r}: only a draft model's head can be cut to a token subset")
    if k is None:
        k = chosen_k(target, chain, inner)
        if k is None:
            return chain  # the full head measured best
    return over_subset(chain, subset_of(target, k))


def chosen_k(target: LoadedModel, drafter: ModelDrafter, inner: str, use_cache: bool = True) -> int | None:
    """`best_k` of `measure` over CANDIDATES for this target, draft and machine (None: the full head),
    measured once and kept in the machine cache."""
    key = cost_cache.key_of(["vocab-k", COUNTS_FORMAT, cost_cache.machine_id(), cost_cache.cpu_count(),
                             cost_cache.model_fingerprint(target.model), cost_cache.model_fingerprint(drafter.model),
                             cost_cache.spec_fingerprint(inner), CANDIDATES])
    stored = cost_cache.read(key) if use_cache else None
    if stored is not None and "k" in stored:
        return stored["k"]
    rows = measure(target, drafter, ks=CANDIDATES)
    k = best_k(rows)
    if use_cache:
        cost_cache.write(key, {"k": k, "rows": rows})
    return k


def step_ms(drafter: ModelDrafter, context: torch.Tensor, vocab_size: int, reps: int = 20) -> float:
    """The draft's fastest one-token step after `context` (one pass over its last token and q over the
    vocabulary, what a drafted token costs), in ms: the minimum of reps, the least disturbed by a busy machine."""
    params = DecodeParams(gamma=1, temperature=1.0)
    ids = context.tolist()
    best = float("inf")
    drafter.begin()
    drafter.draft(context, ids, 1, params, vocab_size)  # the context into its cache
    for _ in range(reps):
        drafter.commit(len(ids) - 1, None, 0)  # the last token again
        start = time.perf_counter()
        drafter.draft(context, ids, 1, params, vocab_size)
        best = min(best, time.perf_counter() - start)
    return 1e3 * best


def modelled_speedup(alpha: float, c: float, gamma: int) -> float:
    """Leviathan et al.'s (1 - α^(γ+1)) / ((1 - α)(1 + γc)), verification at one target step."""
    tokens = gamma + 1.0 if alpha >= 1.0 else (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)
    return tokens / (1.0 + gamma * c)


def best_k(rows: Sequence[dict]) -> int | None:
    """The K (None: the full head) of `measure`'s rows whose modelled speedup is highest."""
    return max(rows, key=lambda r: r["speedup"])["k"]


def measure(target: LoadedModel, drafter: ModelDrafter, ks: Sequence[int] = CANDIDATES, prompts: int = 6,
            max_new_tokens: int = 64, gamma: int = 4, counts: Counter[int] | None = None) -> list[dict]:
    """α and the draft's cost per drafted token for each K (and the full head, k None) on the first `prompts`
    held-out prompts, greedy: [{"k", "alpha", "draft_ms_per_token", "step_ms", "c", "speedup", "coverage"}]
    (draft_ms_per_token: the rounds' mean after the first; step_ms: `step_ms`'s fastest step; c: that over the
    target's own fastest step; speedup: `modelled_speedup` at γ; coverage: the share of the target's answer
    tokens inside S). `best_k` picks from them. Indicative: timings on a shared machine move with its load."""
    counts = target_counts(target) if counts is None else counts
    texts = read_prompts("heldout", prompts)
    context = target.encode_chat([{"role": "user", "content": texts[0]}])
    target_step = step_ms(ModelDrafter(target.model), context, target.vocab_size)
    rows = []
    for k in [None, *ks]:
        if k is not None and k >= target.vocab_size:
            continue
        ids = None if k is None else subset_of(target, k, counts)
        form = drafter if ids is None else over_subset(drafter, ids)
        inside = None if ids is None else set(ids.tolist())
        drafted = accepted = emitted = covered = timed = 0
        draft_time = 0.0
        step = step_ms(form, context, target.vocab_size)
        for text in texts:
            result = answer(target, text, max_new_tokens, form, gamma)
            for i, r in enumerate(result.rounds):
                drafted += r.drafted
                accepted += r.accepted
                if i:  # the first round's draft time holds the draft's pass over the prompt
                    draft_time += r.draft_time
                    timed += r.drafted
            emitted += len(result.token_ids)
            covered += len(result.token_ids) if inside is None else sum(t in inside for t in result.token_ids)
        alpha = accepted / drafted if drafted else 0.0
        rows.append({"k": k, "alpha": alpha, "draft_ms_per_token": 1e3 * draft_time / timed if timed else None,
                     "step_ms": step, "target_step_ms": target_step, "c": step / target_step,
                     "speedup": modelled_speedup(alpha, step / target_step, gamma),
                     "coverage": covered / emitted if emitted else None, "measured_at": time.strftime("%H:%M:%S")})
    return rows
