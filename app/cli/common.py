"""Arguments shared by the subcommands that load a model pair."""

from __future__ import annotations

import argparse

from app.engine import DecodeParams


def add_model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="default", help="'default' (embedded SmolLM2), a directory, a .gguf file or a hub id")
    parser.add_argument("--draft", default="self", help="'self' (reduced-precision copy of the target), 'prompt-lookup', 'none', or a model like --target")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: best available)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow the model's own Python code to run")


def add_sampling_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gamma", type=int, default=4, help="draft length per round (1..16)")
    parser.add_argument("--temperature", type=float, default=0.7, help="0 = greedy")
    parser.add_argument("--top-k", type=int, default=0, help="0 disables")
    parser.add_argument("--top-p", type=float, default=1.0, help="1 disables")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-new-tokens", type=int, default=256)


def params_from(args: argparse.Namespace) -> DecodeParams:
    """Validates and raises ValueError with a one-line message on bad values."""
    return DecodeParams(
        gamma=args.gamma,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
