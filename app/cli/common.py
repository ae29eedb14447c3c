"""Arguments shared by the subcommands that load a model pair, and the terminal progress bar."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

DTYPES = ("auto", "bfloat16", "float32", "float16")

if TYPE_CHECKING:  # torch loads only when a command runs: `--help` and `--version` stay instant
    from app.engine import DecodeParams


def add_model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default="default", help="'default' (embedded SmolLM2), a directory, a .gguf file or a hub id")
    parser.add_argument("--draft", default="auto", help="'auto' (the drafter measured fastest on this machine, or none), "
                        "'self' (reduced-precision copy of the target), 'trained' (a feature draft made by speclens "
                        "distill), a distill output folder, 'prompt-lookup', 'none', or a model like --target")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: best available)")
    parser.add_argument("--dtype", default="auto", choices=DTYPES,
                        help="the target's dtype; 'auto' (default): on a CPU, bfloat16 with packed kernels where "
                             "timing shows it faster, else float32; on a GPU, bfloat16 or float16")
    parser.add_argument("--kernels", default="auto", choices=("auto", "native", "torch"),
                        help="the target's CPU kernels; 'auto' (default): the fastest timed at load among torch's "
                             "paths and the native C model (kept where its quality against fp32 passes); 'torch': "
                             "torch's paths only; 'native': the native C model on the GGUF's own 4-bit blocks (one "
                             "call a pass; its quality against fp32 is measured at load and shown with the kernels)")
    parser.add_argument("--draft-device", default=None, help="device for a draft model (default: the target's)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow the model's own Python code to run")
    parser.add_argument("--allow-pickle", action="store_true", help="allow loading pickle (.bin) weights, which can run code")
    parser.add_argument("--offline", action="store_true", help="never contact the hub; use the local cache only")


def dtype_arg(args: argparse.Namespace):
    """--dtype as a torch dtype; None for 'auto' (load_model chooses)."""
    if getattr(args, "dtype", "auto") == "auto":
        return None
    import torch

    return getattr(torch, args.dtype)


def target_kwargs(args: argparse.Namespace) -> dict:
    """The target's own load options: --dtype (dtype_arg) and --kernels."""
    return {"dtype": dtype_arg(args), "kernels": getattr(args, "kernels", "auto")}


def load_kwargs(args: argparse.Namespace) -> dict:
    """load_model/make_drafter keyword arguments from the model options (offline=None follows
    HF_HUB_OFFLINE). --dtype is the target's alone (dtype_arg): a draft model keeps its own default."""
    return {
        "trust_remote_code": args.trust_remote_code,
        "allow_pickle": args.allow_pickle,
        "offline": True if args.offline else None,
        "progress": ProgressBar(),
    }


def choose_drafter(args: argparse.Namespace, target, draft_kwargs: dict, log=None, *, need_draft: bool = False):
    """(drafter, live γ controller or None): the one place a command turns --draft (and --tree) into a drafter.

    'auto' (or γ 'auto') goes to the app's choice by measurement (app.drafting.auto.select; cached
    timings when there are some), never to the model loader as an id, and says what it chose and why; a
    hand-set draft with a hand-set γ loads as given (its tree form with --tree on). need_draft: a command
    that exists to show speculation (record, selftest) takes auto's fastest measured drafter when auto
    chose target-only, and says so. A measured tree keeps its depth; --tree-nodes N resizes it."""
    from app.drafting.auto import select
    from app.drafting.drafts import make_drafter
    from app.drafting.registry import AUTO, NO_DRAFT

    log = log or sys.stderr
    gamma_auto = getattr(args, "gamma", None) == "auto"
    if args.draft != AUTO and (not gamma_auto or args.draft == NO_DRAFT):
        drafter = make_drafter(args.draft, target, **draft_kwargs)
        return tree_drafter(args, drafter, 4 if gamma_auto else args.gamma), None
    selection = select(target, args.draft, tree=tree_mode(args), **draft_kwargs)
    cal = selection.calibration
    how = "cached measurement" if cal.cached else f"measured in {cal.seconds:.1f} s"
    print(f"choice ({how}): {selection.choice.reason}", file=log)
    if need_draft and selection.drafter is None and args.draft == AUTO:
        from app.drafting.speculate_anyway import speculate_anyway

        selection = speculate_anyway(selection, target, **draft_kwargs)
        print(f"speculating anyway: {selection.choice.reason}", file=log)
    drafter = tree_drafter(args, selection.drafter, selection.choice.gamma, selection.choice)
    return drafter, selection.auto_gamma() if gamma_auto else None


def answer_loop(target, drafter, auto, params: DecodeParams, static=None):
    """The command's answer (app.session.AnswerLoop), run as the app runs one: γ from the live controller
    `auto` when there is one (γ auto), every round fed to it and to the check of the target's machine
    profile."""
    from app.machine.live_check import LiveCheck
    from app.session.answer_loop import AnswerLoop

    return AnswerLoop(target=target, drafter=drafter, params=params, static=static, controller=auto,
                      gamma_auto=auto is not None, check=LiveCheck.of(target))


class ProgressBar:
    """Renders LoadProgress on stderr: a redrawn bar on a terminal, one line per stage otherwise."""

    WIDTH = 24

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.stage = None

    def __call__(self, p) -> None:
        if self.tty:
            filled = int(self.WIDTH * p.fraction)
            size = f" {p.bytes_done / 2**20:.0f}/{p.bytes_total / 2**20:.0f} MiB" if p.bytes_total else ""
            end = "\n" if p.stage == "done" else ""
            self.stream.write(f"\r\033[K[{'#' * filled}{'.' * (self.WIDTH - filled)}] {p.message}{size}{end}")
        elif p.stage != self.stage:
            self.stream.write(f"{p.message}\n")
        self.stage = p.stage
        self.stream.flush()


def gamma_arg(text: str) -> int | str:
    """--gamma: 'auto' or an integer (its range is checked by DecodeParams)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an integer, got {text!r}") from None


def add_engine_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--static", action="store_true",
                        help="decode on static KV caches with fixed-shape steps (one host sync per round)")
    parser.add_argument("--compile", action="store_true",
                        help="also torch.compile the draft and verify steps (implies --static; CUDA graphs on a "
                             "GPU; compiling takes a minute or more before the first answer)")


def static_decoder(args: argparse.Namespace, target_model, drafter, max_gamma: int, stream=None):
    """The StaticDecoder --static/--compile ask for, warmed up with progress on stderr; None without them.

    Raises ValueError (a one-line message) when the models or the drafter cannot use static caches.
    """
    if not (args.static or args.compile):
        return None
    from app.engine.static import StaticDecoder

    stream = stream or sys.stderr
    decoder = StaticDecoder(target_model, compile=args.compile)
    reason = decoder.supports(drafter)
    if reason is not None:
        raise ValueError(reason)

    def progress(done: int, total: int, what: str) -> None:
        verb = "compiling" if args.compile else "warming up"
        stream.write(f"{verb} decoding steps [{done}/{total}] {what}\n")
        stream.flush()

    seconds = decoder.warm_up(drafter, max_gamma, progress)
    if args.compile:
        stream.write(f"compiled in {decoder.compile_seconds:.1f} s (warm-up {seconds:.1f} s)\n")
    return decoder


def nodes_arg(text: str) -> int | str:
    """--tree-nodes: 'auto' or a node budget of at least 1."""
    value = gamma_arg(text)
    if isinstance(value, int) and value < 1:
        raise argparse.ArgumentTypeError(f"a tree needs at least 1 node, got {value}")
    return value


def add_tree_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tree", choices=("auto", "on", "off"), default="auto",  # policy.TREE_MODES
                        help="token trees: 'auto' (a tree where the measured costs predict it beats the chain), "
                             "'on', or 'off' (chains only)")
    parser.add_argument("--tree-nodes", type=nodes_arg, default="auto",
                        help="nodes verified per tree round, or 'auto' (sized by measurement; 16 unmeasured)")


def tree_mode(args: argparse.Namespace) -> bool | None:
    """--tree for the policy: None lets the measurement choose, True/False force a tree or a chain
    (a command without the tree options: None)."""
    from app.engine.policy import TREE_MODES

    if not hasattr(args, "tree"):
        return None
    if args.tree == "auto" and args.tree_nodes != "auto":
        return True  # a node budget asks for a tree
    return TREE_MODES[args.tree]


def tree_drafter(args: argparse.Namespace, drafter, gamma: int, choice=None):
    """The drafter the --tree options ask for. choice: the measured policy.Choice when one was made
    (select() already gave the tree form it chose; --tree-nodes N resizes it). Unmeasured: the tree
    form for --tree on or --tree-nodes N, else the chain. ValueError for a drafter with no tree form."""
    from app.drafting.drafts import DEFAULT_TREE_NODES

    nodes = args.tree_nodes if getattr(args, "tree_nodes", "auto") != "auto" else None
    if drafter is None:
        return None
    if choice is not None:
        if choice.tree and nodes is not None:
            drafter.budget = nodes
        return drafter
    if not tree_mode(args):
        return drafter
    tree = drafter.tree_form(nodes or DEFAULT_TREE_NODES, gamma)
    if tree is None:
        raise ValueError(f"the {drafter.name} drafter has no token-tree form")
    return tree


def add_sampling_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gamma", type=gamma_arg, default="auto",
                        help="draft length per round: 1..16, or 'auto' (re-chosen every round from the live "
                             "acceptance and costs; the default)")
    parser.add_argument("--temperature", type=float, default=0.7, help="0 = greedy")
    parser.add_argument("--top-k", type=int, default=0, help="0 disables")
    parser.add_argument("--top-p", type=float, default=1.0, help="1 disables")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-new-tokens", type=int, default=256)


def params_from(args: argparse.Namespace) -> DecodeParams:
    """Validates and raises ValueError with a one-line message on bad values."""
    from app.engine import DecodeParams
    from app.engine.policy import AUTO_GAMMA_START

    return DecodeParams(
        gamma=AUTO_GAMMA_START if args.gamma == "auto" else args.gamma,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
    )
