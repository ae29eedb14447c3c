"""The native model's descriptor: its dimensions from a config, checked before any weight is read, and the
one place that names the fields the kernel's Model takes (checked against the build's own layout() when a
build is imported, so Python and C can never disagree on a field; records.py's block layouts likewise).

The kernel checks every size again (csrc/descriptor.h) and refuses what does not fit; this module says
why in the app's words first, so a model the kernel cannot run falls back to torch with a reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Model(**fields) keywords and a layer's keys, in the kernel's own order (kernel.c's MODEL_FIELDS, LAYER_FIELDS)
MODEL_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "max_positions", "eps",
                "cos", "sin", "norm", "embed", "head", "parts")
LAYER_FIELDS = ("attn_norm", "qkv", "qkv_bias", "q_norm", "k_norm", "o", "ffn_norm", "gate_up", "down")

FAMILIES = ("llama", "mistral", "qwen2", "qwen3")  # rotate-half rotary, RMSNorm, SiLU gate/up (Qwen3: q/k norms)
BLOCK, PANEL = 32, 16
MAX_GROUP = 16  # query heads per key head the kernel's scratch holds
MAX_LAYERS, MAX_WIDTH, MAX_HEADS, MAX_HEAD_DIM = 4096, 1 << 20, 1024, 1024
MAX_TABLE = 32768  # rotary rows made at load; longer contexts stop there (context_limit says so)


@dataclass(frozen=True)
class Dims:
    """A Llama-family model's shape as the kernel runs it."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    eps: float
    max_positions: int  # rotary rows the tables hold

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def qkv_width(self) -> int:
        return self.q_width + 2 * self.kv_width


def layout_mismatch(build) -> str | None:
    """None when a kernel build takes the fields this module names, else why not (an older build left in
    place by an install that did not recompile it)."""
    try:
        theirs = build.layout()
    except AttributeError:
        return "the native build predates its typed boundary (reinstall: pip install -e .)"
    if tuple(theirs.get("model", ())) != MODEL_FIELDS or tuple(theirs.get("layer", ())) != LAYER_FIELDS:
        return "the native build's descriptor fields differ from this SpecLens's (reinstall: pip install -e .)"
    from app.native.records import mismatch

    return mismatch(build)


def dims_of(config) -> Dims:
    """The dimensions of a transformers config (its text config), unchecked: config_problem says whether they fit."""
    config = config.get_text_config()
    heads = int(config.num_attention_heads)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    positions = min(int(getattr(config, "max_position_embeddings", 4096) or 4096), MAX_TABLE)
    return Dims(int(config.num_hidden_layers), int(config.hidden_size), heads,
                int(getattr(config, "num_key_value_heads", None) or heads), int(head_dim),
                int(config.intermediate_size), float(getattr(config, "rms_norm_eps", 1e-6)), positions)


def config_problem(config) -> str | None:
    """None when the kernel runs a model of this config exactly as its family defines it, else why not (one
    line). Reads only the config: a cached config.json is checked the same way as transformers' model's."""
    config = config.get_text_config()
    kind = getattr(config, "model_type", None)
    if kind not in FAMILIES:
        return f"the native kernel covers {', '.join(FAMILIES)}, not {kind}"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"the native kernel has SiLU only, not {config.hidden_act}"
    if getattr(config, "use_sliding_window", False) or (kind == "mistral" and getattr(config, "sliding_window", None)):
        return "the native kernel has no sliding-window attention"
    rope = getattr(config, "rope_scaling", None) or getattr(config, "rope_parameters", None) or {}
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("dynamic", "longrope"):
        return "the native kernel has no position-dependent rotary scaling"
    partial = (rope.get("partial_rotary_factor") if isinstance(rope, dict) else None) or getattr(
        config, "partial_rotary_factor", 1.0)
    if partial is not None and float(partial) != 1.0:
        return f"the native kernel rotates whole heads, not a partial rotary factor of {partial}"
    if getattr(config, "mlp_bias", False):
        return "the native kernel has no output or MLP biases"
    try:
        d = dims_of(config)
    except (AttributeError, TypeError, ValueError, ZeroDivisionError) as exc:
        return f"the config's dimensions are incomplete ({exc})"
    return dims_problem(d)


def dims_problem(d: Dims) -> str | None:
    """None when the kernel's limits hold these dimensions, else why not."""
    if not 1 <= d.layers <= MAX_LAYERS:
        return f"the native kernel runs 1 to {MAX_LAYERS} layers, not {d.layers}"
    if not (1 <= d.kv_heads <= d.heads <= MAX_HEADS) or d.heads % d.kv_heads or d.heads // d.kv_heads > MAX_GROUP:
        return f"the native kernel needs whole groups of at most {MAX_GROUP} query heads per key head"
    if not 2 <= d.head_dim <= MAX_HEAD_DIM or d.head_dim % 2:
        return f"the native kernel needs an even head dimension up to {MAX_HEAD_DIM}, not {d.head_dim}"
    for width in (d.hidden, d.ffn, d.q_width):
        if width < BLOCK or width % BLOCK or width > MAX_WIDTH:
            return f"the native kernel needs widths in blocks of 32 ({width} is not)"
    if d.qkv_width % PANEL or d.qkv_width > MAX_WIDTH:
        return f"the native kernel needs output widths in panels of 16 ({d.qkv_width} is not)"
    if not (math.isfinite(d.eps) and d.eps >= 0) or d.max_positions < 1:
        return "the config's norm epsilon or context length is not usable"
    return None


@dataclass(frozen=True)
class Digits:
    """The activation digits each matrix role multiplies: 2 (about 16 bits: far below the weights' rounding)
    or 1 (8 bits, as llama.cpp's Q8_1 rounds them, at half the int8 arithmetic a verified row costs)."""

    qkv: int = 2
    o: int = 2
    gate_up: int = 2
    down: int = 2
    head: int = 2

    ROLES = ("qkv", "o", "gate_up", "down", "head")

    @classmethod
    def all(cls, digits: int) -> Digits:
        return cls(*(digits,) * len(cls.ROLES))

    def with_role(self, role: str, digits: int) -> Digits:
        return Digits(**{r: digits if r == role else getattr(self, r) for r in self.ROLES})

    @property
    def code(self) -> str:
        """"" for two digits everywhere, else one character a role ("11112"): how a profile keeps the choice."""
        digits = "".join(str(getattr(self, r)) for r in self.ROLES)
        return "" if digits == "2" * len(self.ROLES) else digits

    @classmethod
    def of_code(cls, code: str) -> Digits:
        """The digits a code names; a code of another length or other characters (an older profile) is two digits."""
        if len(code) != len(cls.ROLES) or set(code) - {"1", "2"}:
            return cls()
        return cls(*(int(c) for c in code))

    def label(self) -> str:
        """For people: "2 digits", "1 digit", "1 digit (2: head, down)"."""
        ones = [r for r in self.ROLES if getattr(self, r) == 1]
        if not ones:
            return "2 digits"
        twos = [r for r in self.ROLES if getattr(self, r) == 2]
        return "1 digit" + (f" (2: {', '.join(twos)})" if twos else "")


TWO_DIGITS = Digits()
# One digit for every role: the fastest the kernel offers (it takes 1 or 2 for any block type and role). A draft
# takes it without a quality gate: its precision changes only how often its tokens are accepted, never the output.
FASTEST_DIGITS = Digits.all(1)


class Unfit(ValueError):
    """A model the native kernel cannot run, with the reason in one line (the caller falls back to torch)."""
