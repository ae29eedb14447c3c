"""One timed generation per call, through SpecLens's engine or Hugging Face `generate`.

Both sides get the same token ids, the same stop tokens and the same sampling transforms;
the clock runs around the whole call (prefill included) and nothing else.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from transformers import GenerationConfig

from app.engine import DecodeParams, Drafter, PromptLookupDrafter, RoundEvent, generate

from .memory import PeakMemory

TARGET_ONLY, MODEL_DRAFT, PROMPT_LOOKUP = "target-only", "model draft", "prompt lookup"
LOOKUP_MAX_NGRAM = 3


@dataclass(frozen=True, slots=True)
class Config:
    engine: str  # "speclens" | "hf"
    mode: str  # TARGET_ONLY | MODEL_DRAFT | PROMPT_LOOKUP

    @property
    def name(self) -> str:
        label = {"speclens": "SpecLens", "hf": "HF"}[self.engine]
        if self.mode == MODEL_DRAFT:
            return f"{label} {'speculative' if self.engine == 'speclens' else 'assisted'}"
        return f"{label} {self.mode}"


def configs_for(has_draft_model: bool) -> list[Config]:
    """Pairs (SpecLens, HF) in the order they run, interleaved within every repeat."""
    modes = [TARGET_ONLY] + ([MODEL_DRAFT] if has_draft_model else []) + [PROMPT_LOOKUP]
    return [Config(engine, mode) for mode in modes for engine in ("speclens", "hf")]


@dataclass(slots=True)
class Run:
    tokens: list[int]
    seconds: float
    peak_mib: float
    rounds: list[RoundEvent] | None  # SpecLens only: HF does not expose its rounds

    @property
    def tokens_per_second(self) -> float:
        return len(self.tokens) / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class Pair:
    """What a configuration needs: the loaded target, and the draft model when there is one."""

    target: object  # app.models.LoadedModel
    draft_model: object | None  # a PreTrainedModel, or None for prompt-lookup-only pairs
    drafter: Drafter | None  # SpecLens's ModelDrafter around draft_model


def run_config(pair: Pair, config: Config, ids: torch.Tensor, params: DecodeParams) -> Run:
    if config.engine == "speclens":
        return run_speclens(pair, config.mode, ids, params)
    return run_hf(pair, config.mode, ids, params)


def run_speclens(pair: Pair, mode: str, ids: torch.Tensor, params: DecodeParams) -> Run:
    drafters = {TARGET_ONLY: None, MODEL_DRAFT: pair.drafter, PROMPT_LOOKUP: PromptLookupDrafter(LOOKUP_MAX_NGRAM)}
    drafter = drafters[mode]
    t = pair.target
    with PeakMemory(t.device) as mem:
        start = time.perf_counter()
        result = generate(
            t.model, ids, drafter, params, stop_token_ids=t.stop_token_ids, vocab_size=t.vocab_size,
            tokenizer=t.tokenizer,  # the app always streams text, so the benchmark pays for it too
        )
        seconds = time.perf_counter() - start
    return Run(result.token_ids, seconds, mem.peak_mib, result.rounds if drafter is not None else None)


def hf_generation_config(pair: Pair, mode: str, params: DecodeParams) -> GenerationConfig:
    stops = list(pair.target.stop_token_ids)
    kwargs: dict = {
        "max_new_tokens": params.max_new_tokens, "do_sample": not params.greedy,
        "eos_token_id": stops or None, "pad_token_id": stops[0] if stops else None,
    }
    if not params.greedy:
        kwargs |= {"temperature": params.temperature, "top_k": params.top_k, "top_p": params.top_p}
    if mode == PROMPT_LOOKUP:
        # The same n-gram sizes as SpecLens's PromptLookupDrafter (HF's default stops at 2).
        kwargs |= {"prompt_lookup_num_tokens": params.gamma, "max_matching_ngram_size": LOOKUP_MAX_NGRAM}
    return GenerationConfig(**kwargs)


def run_hf(pair: Pair, mode: str, ids: torch.Tensor, params: DecodeParams) -> Run:
    t = pair.target
    extra: dict = {}
    if mode == MODEL_DRAFT:
        # Same draft, same gamma every round: constant schedule and no confidence-based early stop.
        assistant = pair.draft_model
        assistant.generation_config.num_assistant_tokens = params.gamma
        assistant.generation_config.num_assistant_tokens_schedule = "constant"
        assistant.generation_config.assistant_confidence_threshold = 0.0
        extra["assistant_model"] = assistant
    input_ids = ids.reshape(1, -1).to(t.device)
    if params.seed is not None:
        torch.manual_seed(params.seed)
    with PeakMemory(t.device) as mem, torch.inference_mode():
        start = time.perf_counter()
        out = t.model.generate(
            input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
            generation_config=hf_generation_config(pair, mode, params), **extra,
        )
        seconds = time.perf_counter() - start
    return Run(out[0, input_ids.shape[1]:].tolist(), seconds, mem.peak_mib, None)
