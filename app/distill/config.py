"""What a distill run is asked for: the target, the budget and the training's settings, in one dataclass
that the run, its report and the CLI share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DistillConfig:
    target: str = "default"  # a model spec as for --target
    out: str | None = None  # output folder (default: <data dir>/drafts/<target>)
    prompts_file: str | None = None  # extra chat prompts, one a line (answered by the target, trained on)
    text_dir: str | None = None  # text files read by teacher forcing
    minutes: float = 15.0  # whole budget: loading, data, training and evaluation
    device: str | None = None
    vocab_k: int = 8192  # rows of the reduced head
    seed: int = 0
    layers: int = 1
    unroll: int = 2  # training-time unrolled draft steps
    init_layer: int | None = None  # target layer the draft layer starts from (None: the last)
    lr: float = 1e-3
    ce_weight: float = 0.5
    noise: float = 0.1  # uniform feature noise, relative to the feature's RMS
    batch_tokens: int = 2048
    max_len: int = 384
    gen_batch: int = 48  # prompts answered together
    max_new_tokens: int = 192  # per training answer
    samples: tuple[float, ...] = (0.0, 0.7, 1.0, 0.7)  # answer temperatures per prompt, in passes (0 = greedy)
    data_fraction: float = 0.4  # of the budget, at most, for generating data
    eval_fraction: float = 0.12  # of the budget kept for the held-out evaluation
    eval_prompts: int = 40
    eval_tokens: int = 48
    eval_gamma: int = 4
    max_data_tokens: int | None = None  # a fixed data volume instead of the time split
    max_steps: int | None = None  # a fixed number of optimiser steps instead of the time split
    heldout_file: str | None = None  # evaluation prompts (default: the built-in held-out set)
    data_cache: str | None = None  # a .pt file: generated sequences are appended to it and reused next run
    command: str | None = None  # the command line, written beside the draft
    name: str | None = None
