"""`run_distill`: the orchestration of a distill run (data from the target, training, held-out evaluation,
files) within its time budget. Qt-free; see the package docstring."""

from __future__ import annotations

import json
import math
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_format import FeatureDraftConfig
from app.engine.feature_net import FeatureDraftModel

from .config import DistillConfig
from .data import Sequence, builtin_prompts, generate_answers, read_prompts, read_text, read_texts
from .data_cache import load_cache, save_cache
from .evaluate import evaluate
from .init_draft import init_from_target
from .report import config_json, data_stats, markdown
from .train import Batch, Shared, agreement, collate, losses, make_batches
from .vocab_subset import chat_end_ids, choose_subset


@dataclass(frozen=True)
class DistillProgress:
    phase: str  # "load" | "data" | "train" | "eval" | "save" | "done"
    fraction: float  # of this phase, 0..1
    message: str
    eta_s: float | None = None  # seconds left in this phase
    metrics: dict = field(default_factory=dict)


Progress = Callable[[DistillProgress], None]


class Phase:
    """Budget bookkeeping: the deadline of each phase from the run's start."""

    def __init__(self, cfg: DistillConfig) -> None:
        self.start = time.perf_counter()
        self.total = cfg.minutes * 60.0
        self.data_end = self.start + cfg.data_fraction * self.total
        self.train_end = self.start + (1.0 - cfg.eval_fraction) * self.total

    def now(self) -> float:
        return time.perf_counter()


def run_distill(config: DistillConfig, progress: Progress | None = None, cancel: threading.Event | None = None,
                target=None) -> dict:
    """Train a feature draft for config.target; returns the report (also written to out/report.json).

    `target` may be an already loaded LoadedModel (the GUI has one). Cancelling (cancel.set()) stops the
    current phase cleanly: during training the best checkpoint so far is kept and the report says
    "cancelled"; before any checkpoint nothing is written.
    """
    from app.drafting.trained_drafts import REPORT_NAME, default_output_dir, save_trained_draft
    from app.models import load_model
    from app.models.loading import with_transformers
    from app.native.model import is_native

    report_progress = progress or (lambda _: None)
    cancel = cancel or threading.Event()
    cfg = config
    budget = Phase(cfg)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    if target is None:
        report_progress(DistillProgress("load", 0.0, f"loading {cfg.target}"))
        target = load_model(cfg.target, device=cfg.device)
    if is_native(target.model):  # training reads transformers' forward: its model of the target, in float32
        report_progress(DistillProgress("load", 0.0, f"loading {target.name} as transformers' model"))
        target = with_transformers(target)
    model = target.model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    device = target.device
    out = Path(cfg.out).expanduser() if cfg.out else default_output_dir(target.name)
    stop_ids = set(target.stop_token_ids) | chat_end_ids(target.tokenizer)
    pad_id = target.tokenizer.pad_token_id if target.tokenizer.pad_token_id is not None else min(stop_ids)
    train_prompts, val_prompts = _split_prompts(cfg, random.Random(cfg.seed))
    heldout = read_prompts(cfg.heldout_file) if cfg.heldout_file else builtin_prompts("heldout")
    overlap = set(heldout) & set(train_prompts + val_prompts)
    if overlap:
        raise ValueError(f"{len(overlap)} evaluation prompt(s) also appear in the training prompts")

    # ---- data
    t_data = time.perf_counter()
    train, val = _collect(cfg, target, train_prompts, val_prompts, stop_ids, pad_id, budget, cancel, report_progress)
    data_seconds = time.perf_counter() - t_data
    if cancel.is_set() and not train:
        return {"cancelled": True, "phase": "data"}
    if not train:
        raise ValueError("no training data could be generated in the time budget; give more --minutes")
    vocab_ids, coverage = choose_subset(cfg, target, train, val, stop_ids)

    # ---- model
    dcfg = FeatureDraftConfig.for_target(model, n_layers=cfg.layers, vocab_k=len(vocab_ids))
    torch.manual_seed(cfg.seed)  # right here: loading the target may have drawn from the global stream
    draft = FeatureDraftModel(dcfg)
    init_from_target(draft, model, cfg.init_layer)
    draft.vocab_ids.copy_(vocab_ids)
    draft = draft.to(device=device, dtype=torch.float32).train()
    head = model.get_output_embeddings().weight.detach()
    shared = Shared(model.get_input_embeddings().weight.detach().float(), head[vocab_ids.to(device)].float(),
                    model.base_model.rotary_emb)
    tops = _tops(model, val, device)
    rng = random.Random(cfg.seed + 1)
    val_batches = [collate(b, cfg.max_len, device, tops) for b in make_batches(val, cfg.batch_tokens, cfg.max_len, rng,
                                                                                 shuffle=False)]
    name = cfg.name or f"{target.name} feature draft"
    meta = {"trained_on": target.name, "target_spec": cfg.target, "command": cfg.command}

    def save(step: int, score: list[float]) -> None:
        draft.eval()
        save_trained_draft(out, draft, name=name, target_name=target.name,
                           extra={"checkpoint": {"step": step, "val_agreement": score}})
        draft.train()

    # ---- training
    t_train = time.perf_counter()
    best, steps, tokens_seen, history = _train(cfg, draft, shared, train, val_batches, budget, cancel, device, rng,
                                               save, report_progress)
    train_seconds = time.perf_counter() - t_train
    if best is None:
        return {"cancelled": True, "phase": "train"}
    result: dict = {
        "name": name, "target": target.name, "config": config_json(cfg), "cancelled": cancel.is_set(),
        "data": data_stats(train, val, data_seconds) | {"vocab_k": len(vocab_ids), "coverage": coverage},
        "training": {"seconds": round(train_seconds, 1), "steps": steps, "tokens": tokens_seen,
                     "best_val_agreement": best, "history": history},
        "device": str(device), "threads": torch.get_num_threads(), "torch": torch.__version__, **meta,
    }
    # ---- evaluation of the best checkpoint (reloaded from disk: what ships is what is measured)
    if not cancel.is_set():
        from app.drafting.trained_drafts import load_trained_draft

        drafter: FeatureDrafter = load_trained_draft(out, target)
        total = len(heldout[: cfg.eval_prompts]) * 2
        t_eval = time.perf_counter()
        end = budget.start + budget.total

        def on_prompt(done, total_):
            report_progress(DistillProgress("eval", done / total_, f"held-out prompt {done}/{total_}",
                                            max(0.0, end - time.perf_counter())))

        report_progress(DistillProgress("eval", 0.0, f"evaluating on {total // 2} held-out prompts"))
        result["evaluation"] = evaluate(target, drafter, heldout[: cfg.eval_prompts], gamma=cfg.eval_gamma,
                                        max_new_tokens=cfg.eval_tokens, seed=cfg.seed, deadline=end,
                                        on_prompt=on_prompt)
        result["evaluation"]["seconds"] = round(time.perf_counter() - t_eval, 1)
        result["summary"] = result["evaluation"]["summary"]
    else:
        result["summary"] = {"alpha_greedy": None, "alpha_sampled": None, "c": None,
                             "val_agreement": best}
    result["total_seconds"] = round(time.perf_counter() - budget.start, 1)
    (out / REPORT_NAME).write_text(json.dumps(result, indent=1), encoding="utf-8")
    (out / "report.md").write_text(markdown(result), encoding="utf-8")
    if cfg.command:
        (out / "command.txt").write_text(cfg.command + "\n", encoding="utf-8")
    report_progress(DistillProgress("done", 1.0, f"wrote {out}"))
    result["out"] = str(out)
    return result


def _split_prompts(cfg: DistillConfig, rng: random.Random) -> tuple[list[str], list[str]]:
    """Built-in training prompts (shuffled by seed), about 6% kept apart for checkpoint selection; user
    prompts go to training."""
    builtin = builtin_prompts("train")
    rng.shuffle(builtin)
    n_val = max(2, len(builtin) // 16)
    user = read_prompts(cfg.prompts_file) if cfg.prompts_file else []
    return user + builtin[n_val:], builtin[:n_val]


def _collect(cfg, target, train_prompts, val_prompts, stop_ids, pad_id, budget, cancel, report):
    """Answers in passes over the prompts (one temperature per pass), then teacher-forced text."""
    generator = torch.Generator(device=target.device).manual_seed(cfg.seed)
    encode = lambda p: target.encode_chat([{"role": "user", "content": p}])  # noqa: E731
    train: list[Sequence] = []
    val: list[Sequence] = []
    limit = cfg.max_data_tokens
    texts = read_texts(cfg.text_dir) if cfg.text_dir else []
    for text in texts:  # teacher forcing is one pass per chunk: cheap, so it goes first
        ids = target.tokenizer(text, return_tensors="pt")["input_ids"][0]
        for start in range(0, len(ids) - 1, cfg.max_len):
            train.append(read_text(target.model, ids[start : start + cfg.max_len]))
    jobs = [(p, t, True) for p in val_prompts for t in cfg.samples[:2]]
    for temperature in cfg.samples:
        jobs += [(p, temperature, False) for p in train_prompts]
    cached = load_cache(cfg.data_cache)
    if cached:
        # Reuse answers already generated by an earlier run with the same settings (prompt order is seeded).
        n_done = len(cached)
        for seq, (_, _, is_val) in zip(cached, jobs, strict=False):
            (val if is_val else train).append(seq)
        jobs = jobs[n_done:]
        report(DistillProgress("data", 0.0, f"reusing {n_done} cached answers from {cfg.data_cache}"))
    start = time.perf_counter()
    generated = 0
    for i in range(0, len(jobs), cfg.gen_batch):
        n_tokens = sum(len(s.tokens) for s in train)
        if cancel.is_set() or (i and time.perf_counter() > budget.data_end) or (limit and n_tokens >= limit):
            break
        chunk = jobs[i : i + cfg.gen_batch]
        seqs = generate_answers(target.model, [encode(p) for p, _, _ in chunk], [t for _, t, _ in chunk],
                                cfg.max_new_tokens, stop_ids, pad_id, generator,
                                autocast=target.device.type == "cuda",
                                stop=lambda: cancel.is_set() or time.perf_counter() > budget.data_end)
        for seq, (_, _, is_val) in zip(seqs, chunk, strict=True):
            (val if is_val else train).append(seq)
            generated += len(seq.tokens) - seq.answer_start
        if cfg.data_cache:
            cached = cached + seqs
            save_cache(cfg.data_cache, cached)
        elapsed = time.perf_counter() - start
        rate = generated / elapsed if elapsed else 0.0
        frac_time = (time.perf_counter() - budget.start) / max(1e-9, budget.data_end - budget.start)
        frac = max(min(1.0, (i + len(chunk)) / len(jobs)), min(1.0, frac_time))
        eta = max(0.0, min(budget.data_end - time.perf_counter(),
                           elapsed / max(1, i + len(chunk)) * (len(jobs) - i - len(chunk))))
        report(DistillProgress("data", frac, f"{(n_tokens + sum(len(s.tokens) for s in seqs)) / 1000:.1f}k tokens, "
                               f"{rate:.0f} answer tok/s", eta, {"tokens": n_tokens, "answer_tok_s": rate}))
    return train, val


@torch.no_grad()
def _tops(model, seqs: list[Sequence], device) -> dict[int, torch.Tensor]:
    """Target argmax over the full vocabulary at every position of the validation sequences."""
    head = model.get_output_embeddings()
    return {id(s): head(s.feats.to(device, head.weight.dtype)).argmax(-1).cpu() for s in seqs}


def _train(cfg, draft, shared, train, val_batches, budget, cancel, device, rng, save, report):
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    gen = torch.Generator(device=device).manual_seed(cfg.seed + 2)
    t0 = time.perf_counter()
    span = max(1.0, budget.train_end - t0)
    val_every = max(15.0, span / 14)
    next_val = t0 + val_every
    best_score, best, steps, tokens, history = -1.0, None, 0, 0, []
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    last_parts = []

    def progress_fraction():
        if cfg.max_steps:
            return min(1.0, steps / cfg.max_steps)
        return min(1.0, (time.perf_counter() - t0) / span)

    def validate():
        nonlocal best_score, best
        draft.eval()
        with autocast:
            score = agreement(draft, shared, val_batches, cfg.unroll, draft.vocab_ids)
        draft.train()
        value = sum(score)
        history.append({"step": steps, "seconds": round(time.perf_counter() - t0, 1), "val_agreement": score})
        if value > best_score:
            best_score, best = value, score
            save(steps, score)
        return score

    finished = False
    while not finished:
        for group in make_batches(train, cfg.batch_tokens, cfg.max_len, rng):
            frac = progress_fraction()
            if cancel.is_set() or frac >= 1.0:
                finished = True
                break
            warm = min(1.0, (frac + 1e-3) / 0.03)
            lr = cfg.lr * warm * 0.5 * (1 + math.cos(math.pi * frac))
            for g in opt.param_groups:
                g["lr"] = lr
            batch: Batch = collate(group, cfg.max_len, device)
            with autocast:
                loss, last_parts = losses(draft, shared, batch, cfg.unroll, cfg.ce_weight, cfg.noise, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            steps += 1
            tokens += int((batch.weight > 0).sum())
            now = time.perf_counter()
            # A fixed step count validates on a step schedule, so the kept checkpoint depends on the seed only.
            due = steps % max(1, cfg.max_steps // 10) == 0 if cfg.max_steps else now >= next_val
            if due:
                next_val = now + val_every
                validate()
            elapsed = now - t0
            eta = (cfg.max_steps - steps) * elapsed / steps if cfg.max_steps else span - elapsed
            report(DistillProgress(
                "train", progress_fraction(),
                f"step {steps}, {tokens / max(elapsed, 1e-9):.0f} tok/s, loss {loss.item():.3f}, "
                f"val top-1 {'/'.join(f'{a:.2f}' for a in best) if best else '-'}",
                max(0.0, eta), {"loss": loss.item(), "parts": last_parts, "lr": lr}))
    if not cancel.is_set() or best is None:
        validate()
    return best, steps, tokens, history


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
