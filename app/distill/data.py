"""Training data from the target itself: its answers to chat prompts, and text read by teacher forcing.

Every sequence keeps the token ids and the target's final-norm features f_j at every position (bf16, on
the CPU), which is all the draft trains on: the target distribution at j is head(f_j), recomputed.
Answers are generated in large left-padded batches with one target pass per step; the features come
from those same passes, so there is no second forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import DynamicCache

from app.engine.kv import cache_argument
from app.paths import resource_path

TEXT_SUFFIXES = (".txt", ".md", ".rst", ".py", ".json", ".csv", ".html", ".tex")


@dataclass
class Sequence:
    tokens: torch.Tensor  # [L] long
    feats: torch.Tensor  # [L, H] bf16: f_j for every position j
    answer_start: int  # first generated position (== L for teacher-forced text)
    source: str  # "greedy" | "sampled" | "text"


def read_prompts(path: str | Path) -> list[str]:
    """One prompt per non-empty line; lines starting with # are comments."""
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read prompts from {path}: {exc}") from exc
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def builtin_prompts(split: str) -> list[str]:
    """split: "train" or "heldout" (never trained on)."""
    return read_prompts(resource_path("distill", f"{split}_prompts.txt"))


def read_texts(folder: str | Path) -> list[str]:
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"--text: {folder} is not a directory")
    texts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix.lower() in TEXT_SUFFIXES:
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    return [t for t in texts if t.strip()]


@torch.inference_mode()
def generate_answers(
    model, prompts: list[torch.Tensor], temperatures: list[float], max_new_tokens: int, stop_ids: set[int],
    pad_id: int, generator: torch.Generator, autocast: bool = False, stop: Callable[[], bool] = lambda: False,
) -> list[Sequence]:
    """Answer each prompt (ids [L_i]) at its temperature (0 = greedy) in one left-padded batch.

    `stop()` is polled every step: when it says so, the answers end where they are (still usable data).
    """
    device = next(model.parameters()).device
    b, width = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((b, width), pad_id, dtype=torch.long)
    mask = torch.zeros((b, width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = p
        mask[i, width - len(p) :] = 1
    ids, mask = ids.to(device), mask.to(device)
    temps = torch.tensor(temperatures, dtype=torch.float32, device=device)
    head = model.get_output_embeddings()
    cache = DynamicCache(config=model.config)
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    feats: list[list[torch.Tensor]] = [[] for _ in range(b)]
    answers: list[list[int]] = [[] for _ in range(b)]
    done = [False] * b
    stops = torch.tensor(sorted(stop_ids), dtype=torch.long, device=device)
    with _autocast(device, autocast):
        h = _trunk(model, ids, mask, pos, cache)  # [b, width, H]
    for i in range(b):
        feats[i].append(h[i, width - len(prompts[i]) :].to("cpu", torch.bfloat16))
    step_pos = pos[:, -1:]
    rows = list(range(b))  # batch row -> prompt index; finished rows are dropped from the batch
    for step in range(max_new_tokens):
        logits = head(h[:, -1]).float()  # [rows, V]
        probs = (logits / temps.clamp_min(1e-4)[:, None]).softmax(-1)
        sampled = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        token = torch.where(temps > 0, sampled, logits.argmax(-1))  # [rows]
        finished = torch.isin(token, stops).tolist()
        for r, t in enumerate(token.tolist()):
            answers[rows[r]].append(t)
            done[rows[r]] = finished[r]
        if all(done) or step == max_new_tokens - 1 or stop():
            break  # the last tokens are not fed: no training pair needs their features
        live = [r for r in range(len(rows)) if not done[rows[r]]]
        if len(live) < len(rows):
            keep = torch.tensor(live, device=device)
            cache.batch_select_indices(keep)
            mask, step_pos, temps, token = mask[keep], step_pos[keep], temps[keep], token[keep]
            rows = [rows[r] for r in live]
        mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype, device=device)], dim=1)
        step_pos = step_pos + 1
        with _autocast(device, autocast):
            h = _trunk(model, token.view(-1, 1), mask, step_pos, cache)
        h_cpu = h[:, -1].to("cpu", torch.bfloat16)
        for r, i in enumerate(rows):
            feats[i].append(h_cpu[r : r + 1])
    out = []
    for i in range(b):
        f = torch.cat(feats[i])  # [n_fed, H]
        toks = torch.cat([prompts[i], torch.tensor(answers[i], dtype=torch.long)])[: len(f)]
        source = "greedy" if temperatures[i] == 0 else "sampled"
        out.append(Sequence(toks, f, len(prompts[i]), source))
    return out


@torch.inference_mode()
def read_text(model, ids: torch.Tensor, autocast: bool = False) -> Sequence:
    """Teacher forcing over a token sequence [L]: one target pass, features of every position."""
    device = next(model.parameters()).device
    with _autocast(device, autocast):
        h = model.base_model(ids.view(1, -1).to(device)).last_hidden_state[0]
    return Sequence(ids, h.to("cpu", torch.bfloat16), len(ids), "text")


def _trunk(model, ids, mask, positions, cache) -> torch.Tensor:
    base = model.base_model
    kwargs = {cache_argument(type(base)): cache}
    return base(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **kwargs).last_hidden_state


def _autocast(device: torch.device, enabled: bool):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled and device.type == "cuda")
