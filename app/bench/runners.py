"""One timed generation per call, through SpecLens's engine or Hugging Face `generate`.

Both sides get the same token ids, the same stop tokens and the same sampling transforms;
the clock runs around the whole call (prefill included) and nothing else.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from transformers import GenerationConfig

from app.drafting import registry
from app.drafting.drafts import make_drafter
from app.engine import DecodeParams, Drafter, Result, RoundEvent
from app.machine.clock import sync
from app.machine.live_check import LiveCheck
from app.session.answer_loop import AnswerLoop

from . import llama_cpp_runner
from .memory import PeakMemory

if TYPE_CHECKING:
    from app.drafting.auto import Selection
    from app.engine.static import StaticDecoder
    from app.models import LoadedModel

    from .llama_cpp_runner import LlamaCppWorker

TARGET_ONLY, MODEL_DRAFT, PROMPT_LOOKUP = "target-only", "model draft", "prompt lookup"
HF_BF16 = "target-only (bf16)"  # HF only: the target as HF loads it, cast to bf16 (stock kernels)
HF_DEFAULTS = "assisted (HF defaults)"  # HF only: the assistant's own defaults
TRAINED = "trained draft"  # SpecLens only: a feature draft HF cannot run
AUTO = "auto"  # SpecLens only: the app's default, drafter and γ chosen by measurement
LLAMA_CPP = "llama.cpp"  # the engine of the rows run in llama_cpp_worker's process (target-only, prompt lookup)
LLAMA_CPP_BIN = "llama.cpp binaries"  # `bench --pair`: llama-bench (target-only), llama-speculative-simple (draft)
LOOKUP_MAX_NGRAM = 3  # HF's and llama.cpp's n-gram sizes, as SpecLens's prompt lookup (the registry's) takes them
# Hugging Face's own assisted-generation defaults (GenerationConfig, transformers 5.x).
HF_DEFAULT_ASSISTANT = {"num_assistant_tokens": 20, "num_assistant_tokens_schedule": "heuristic",
                        "assistant_confidence_threshold": 0.4}


@dataclass(frozen=True, slots=True)
class Config:
    engine: str  # "speclens" | "hf" | LLAMA_CPP | LLAMA_CPP_BIN
    mode: str  # TARGET_ONLY | MODEL_DRAFT | PROMPT_LOOKUP

    @property
    def name(self) -> str:
        if self.engine == LLAMA_CPP_BIN:
            return {TARGET_ONLY: "llama.cpp target-only (llama-bench)",
                    MODEL_DRAFT: "llama.cpp draft model (llama-speculative-simple)"}[self.mode]
        label = {"speclens": "SpecLens", "hf": "HF", LLAMA_CPP: "llama.cpp"}[self.engine]
        if self.mode == MODEL_DRAFT:
            return f"{label} {'speculative' if self.engine == 'speclens' else 'assisted'}"
        if self.mode == AUTO:
            return f"{label} auto (default)"
        return f"{label} {self.mode}"


def configs_for(has_draft_model: bool, has_trained: bool = False, has_auto: bool = False,
                has_hf_bf16: bool = False, speclens_draft: bool = True, has_llama_cpp: bool = False) -> list[Config]:
    """Pairs (SpecLens, HF) in the order they run, interleaved within every repeat, then HF assisted with
    its own defaults beside the fixed-γ run, llama.cpp's target-only and prompt lookup, and the SpecLens-only
    trained draft and auto choice.
    speclens_draft=False: the draft model serves HF assisted only (a bf16 target has no cheaper self-draft)."""
    modes = [TARGET_ONLY] + ([MODEL_DRAFT] if has_draft_model else []) + [PROMPT_LOOKUP]
    configs = [Config(engine, mode) for mode in modes for engine in ("speclens", "hf")]
    if has_draft_model:
        configs.insert(4, Config("hf", HF_DEFAULTS))
        if not speclens_draft:
            configs.remove(Config("speclens", MODEL_DRAFT))
    if has_hf_bf16:
        configs.insert(2, Config("hf", HF_BF16))
    if has_llama_cpp:
        configs += [Config(LLAMA_CPP, TARGET_ONLY), Config(LLAMA_CPP, PROMPT_LOOKUP)]
    if has_trained:
        configs.append(Config("speclens", TRAINED))
    if has_auto:
        configs.append(Config("speclens", AUTO))
    return configs


@dataclass(slots=True)
class Run:
    tokens: list[int]
    seconds: float
    peak_mib: float | None  # None: not measurable (llama.cpp's worker on a platform without VmHWM or getrusage)
    rounds: list[RoundEvent] | None  # SpecLens only: HF does not expose its rounds
    target_step: float | None = None  # SpecLens target-only: median seconds of one step (prefill excluded)
    counts: dict | None = None  # llama.cpp binaries: what they report (drafted, accepted, rounds; no token ids)

    @property
    def tokens_per_second(self) -> float:
        return len(self.tokens) / self.seconds if self.seconds > 0 else 0.0


@dataclass(slots=True)
class Pair:
    """What a configuration needs: the loaded target, and the draft model when there is one."""

    target: LoadedModel
    draft_model: Any  # a PreTrainedModel, or None for prompt-lookup-only pairs
    drafter: Drafter | None  # SpecLens's ModelDrafter around draft_model
    hf_model: Any = None  # the target as HF loads it on a CPU (fp32, stock kernels); None: target's
    hf_bf16: Any = None  # the same cast to bf16 (HF's kernels), for the HF bf16 row
    trained: Drafter | None = None  # a trained feature draft for the target, when one exists
    selection: Selection | None = None  # what "auto" chose, and its costs
    auto_gammas: list = field(default_factory=list)  # γ asked for by the live controller, per auto run
    static: StaticDecoder | None = None  # SpecLens runs on static caches
    # (drafters the static path does not support, such as a trained feature draft, run on dynamic ones)
    llama_cpp: LlamaCppWorker | None = None  # on the target's GGUF, when one runs
    llama_bin: LlamaBin | None = None  # `bench --pair`: llama.cpp's own binaries on the target and draft GGUFs
    check: LiveCheck | None = None  # the target's machine profile against the SpecLens rows' rounds (live_check)
    disputed: str = ""  # why those rounds disputed the profile (the next load measures it again), if they did

    def live_check(self) -> LiveCheck | None:
        """The check of the target's machine profile, one for the pair as a chat has one (its rounds add up over
        the runs): made once the profile has its step timed (a drafter selection ran); None until then."""
        if self.check is None:
            self.check = LiveCheck.of(self.target)
        return self.check


def pair_configs(pair: Pair) -> list[Config]:
    """Every configuration the pair can run."""
    return configs_for(pair.draft_model is not None, pair.trained is not None, pair.selection is not None,
                       pair.hf_bf16 is not None, pair.drafter is not None, pair.llama_cpp is not None)


def run_config(pair: Pair, config: Config, ids: torch.Tensor, params: DecodeParams) -> Run:
    if config.engine == "speclens":
        return run_speclens(pair, config.mode, ids, params)
    if config.engine == LLAMA_CPP:
        return run_llama_cpp(pair, config.mode, ids, params)
    if config.engine == LLAMA_CPP_BIN:
        return run_llama_bin(pair, config.mode, ids, params)
    return run_hf(pair, config.mode, ids, params)


def run_llama_cpp(pair: Pair, mode: str, ids: torch.Tensor, params: DecodeParams) -> Run:
    """The same ids and stop tokens in the worker's process, timed there around its generation alone;
    the peak is that process's."""
    assert pair.llama_cpp is not None  # its configurations run only with a worker (pair_configs)
    out = llama_cpp_runner.generate(pair.llama_cpp, mode, ids.tolist(), params, list(pair.target.stop_token_ids))
    return Run(out["tokens"], out["seconds"], out["peak_mib"], None)


@dataclass(frozen=True, slots=True)
class LlamaBin:
    """llama.cpp's binaries (app.bench.llama_cpp_cli) on the pair's two GGUF files."""

    binaries: Any  # llama_cpp_cli.Binaries
    target: Path
    draft: Path
    threads: int


def real_pair_configs(pair: Pair) -> list[Config]:
    """`bench --pair`'s rows, in the order they run: SpecLens target-only, with the draft file, auto (when
    measured), then llama.cpp's binaries (when built): llama-bench target-only, llama-speculative-simple."""
    return pair_bench_configs(pair.drafter is not None, pair.selection is not None, pair.llama_bin is not None)


def pair_bench_configs(has_draft: bool, has_auto: bool, has_llama_bin: bool) -> list[Config]:
    configs = [Config("speclens", TARGET_ONLY)] + ([Config("speclens", MODEL_DRAFT)] if has_draft else [])
    configs += [Config("speclens", AUTO)] if has_auto else []
    if has_llama_bin:
        configs += [Config(LLAMA_CPP_BIN, TARGET_ONLY), Config(LLAMA_CPP_BIN, MODEL_DRAFT)]
    return configs


def run_llama_bin(pair: Pair, mode: str, ids: torch.Tensor, params: DecodeParams) -> Run:
    """llama-bench's tg (no prompt: it decodes from an empty context) for target-only; llama-speculative-simple
    on the prompt's chat-templated text for the draft model. Both clocks are the binaries' own, decode only.
    They report counts, not ids: the Run's tokens are that many -1s."""
    from . import llama_cpp_cli

    run = pair.llama_bin
    assert run is not None  # its configurations run only with the binaries (bench --pair)
    if mode == TARGET_ONLY:
        out = llama_cpp_cli.target_only(run.binaries, run.target, run.threads, params.max_new_tokens)
    else:
        text = pair.target.tokenizer.decode(ids.tolist(), skip_special_tokens=False)
        out = llama_cpp_cli.speculative(run.binaries, run.target, run.draft, text, run.threads,
                                        params.max_new_tokens, params.temperature, params.seed or 0)
    return Run([-1] * out["tokens"], out["seconds"], None, None, counts=out)


def speclens_answer(pair: Pair, mode: str, params: DecodeParams) -> AnswerLoop:
    """A SpecLens row's answer, run as the app runs one: its drafter as every front end gets it (the measured
    choice with a fresh live γ controller for auto; prompt lookup through the registry, so it never proposes
    the target's template tokens), on the static caches where they support it, every round fed to the pair's
    machine check."""
    auto = None
    if mode == AUTO:  # as the app runs by default: the measured choice, γ re-chosen live every round
        assert pair.selection is not None  # the auto configuration runs only with one (pair_configs)
        drafter = pair.selection.drafter
        auto = pair.selection.auto_gamma()
    elif mode == PROMPT_LOOKUP:
        drafter = make_drafter(registry.PROMPT_LOOKUP, pair.target)
    else:
        drafter = {TARGET_ONLY: None, MODEL_DRAFT: pair.drafter, TRAINED: pair.trained}[mode]
    static = pair.static if pair.static is not None and pair.static.supports(drafter) is None else None
    return AnswerLoop(target=pair.target, drafter=drafter, params=params, static=static, controller=auto,
                      check=pair.live_check())


def run_speclens(pair: Pair, mode: str, ids: torch.Tensor, params: DecodeParams) -> Run:
    t = pair.target
    # run as the app runs an answer (the text streamed too, so the benchmark pays for it), a fresh
    # controller each run
    answer = speclens_answer(pair, mode, params)
    drafter, auto = answer.drafter, answer.controller
    result = Result()
    with PeakMemory(t.device) as mem:
        start = time.perf_counter()
        for event in answer.events(ids):
            result.add(event)
        sync(t.device)
        seconds = time.perf_counter() - start
    if (why := answer.disagreement()) is not None and answer.check is not None:  # as the window checks after an answer
        t.profile = answer.check.profile
        pair.disputed = why.text
    if auto is not None:
        pair.auto_gammas.append([r.gamma for r in result.rounds])
    steps = [r.verify_time for r in result.rounds[1:]] if drafter is None else []
    return Run(result.token_ids, seconds, mem.peak_mib, result.rounds if drafter is not None else None,
               statistics.median(steps) if steps else None)


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
    model = pair.hf_bf16 if mode == HF_BF16 else pair.hf_model or t.model
    extra: dict = {}
    if mode == MODEL_DRAFT:
        # Same draft, same gamma every round: constant schedule and no confidence-based early stop.
        assistant = pair.draft_model
        assistant.generation_config.num_assistant_tokens = params.gamma
        assistant.generation_config.num_assistant_tokens_schedule = "constant"
        assistant.generation_config.assistant_confidence_threshold = 0.0
        extra["assistant_model"] = assistant
    elif mode == HF_DEFAULTS:
        # HF's defaults, reset every run (its heuristic schedule otherwise carries over between calls).
        assistant = pair.draft_model
        for key, value in HF_DEFAULT_ASSISTANT.items():
            setattr(assistant.generation_config, key, value)
        extra["assistant_model"] = assistant
    input_ids = ids.reshape(1, -1).to(t.device)
    if params.seed is not None:
        torch.manual_seed(params.seed)
    with PeakMemory(t.device) as mem, torch.inference_mode():
        start = time.perf_counter()
        out = model.generate(
            input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
            generation_config=hf_generation_config(pair, mode, params), **extra,
        )
        sync(t.device)
        seconds = time.perf_counter() - start
    return Run(out[0, input_ids.shape[1]:].tolist(), seconds, mem.peak_mib, None)
