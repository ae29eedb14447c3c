"""A transformers Llama-family model's weights for the native kernel: fused q/k/v and gate/up, rotary
tables made once, and the kernel's Model over them (descriptor.py names its fields; the kernel checks them).

From a GGUF the 4-bit and 8-bit blocks are the file's own (checked against the weights transformers
dequantised from it, so a row order mistake can never pass); any other weight becomes Q8_0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

import torch
from torch import nn

from app.native import active_build, blocks, unavailable
from app.native.blocks import QMatrix
from app.native.descriptor import MODEL_FIELDS, TWO_DIGITS, Digits, Dims, Unfit, config_problem, dims_of


def native_support(model: nn.Module) -> str | None:
    """None when the native kernel runs this model exactly as its family defines it, else why not."""
    config = getattr(model, "config", None)
    if config is None:
        return "not a transformers model"
    why = config_problem(config)
    if why is None and any(getattr(layer.self_attn.o_proj, "bias", None) is not None
                           for layer in model.base_model.layers):
        why = "the native kernel has no output or MLP biases"
    return why


@dataclass
class NativeWeights:
    """The kernel's model (checked whole by the build that runs it) and the parts it was made from."""

    model: object  # build.Model
    build: ModuleType
    dims: Dims
    vocab: int  # logits per row (the head's real rows: the vocabulary's, or a draft's token subset)
    embed: QMatrix
    head: QMatrix
    kinds: str  # "Q4_1 + Q8_0", for people
    nbytes: int
    parts: dict = field(default_factory=dict)  # by part name (parts_of), for native/stored.py
    digits: Digits = TWO_DIGITS  # activation digits each role multiplies

    @property
    def layers(self) -> int:
        return self.dims.layers

    @property
    def hidden(self) -> int:
        return self.dims.hidden

    @property
    def kv_width(self) -> int:
        return self.dims.kv_width

    @property
    def max_positions(self) -> int:
        return self.dims.max_positions


class ModuleFloats:
    """A transformers module's float weights by name (no copy)."""

    def __init__(self, model: nn.Module) -> None:
        self.weights = model.state_dict(keep_vars=True)  # tied heads keep their own name

    def has(self, name: str) -> bool:
        return name in self.weights

    def get(self, name: str) -> torch.Tensor | None:
        w = self.weights.get(name)
        return None if w is None else w.detach()


def from_transformers(model: nn.Module, build: ModuleType | None = None, digits: Digits = TWO_DIGITS) -> NativeWeights:
    """transformers' model's float weights for the kernel, as Q8_0 (a GGUF's own blocks are read from the file
    itself: gguf_model.py). Unfit when the kernel does not run the model."""
    why = native_support(model)
    if why is not None:
        raise Unfit(why)
    return assemble(model.config, parts_of(model.config, ModuleFloats(model)), build, digits)


OPTIONAL = (".qkv_bias", ".q_norm", ".k_norm", "rope_freqs")  # each in every layer (or the model) or in none


def expected_shapes(config, tied: bool) -> dict[str, tuple[int, ...]]:
    """Every part's shape as the config's dimensions make it: (rows, inputs) of a matrix, (length,) of a vector.
    The q/k/v bias and the q/k norms (OPTIONAL) are in some families only."""
    config = config.get_text_config()
    d = dims_of(config)
    shapes: dict[str, tuple[int, ...]] = {"embed": (int(config.vocab_size), d.hidden), "norm": (d.hidden,),
                                          "rope_freqs": (d.head_dim // 2,)}
    if not tied:
        shapes["head"] = (int(config.vocab_size), d.hidden)
    for i in range(d.layers):
        shapes |= {f"{i}.attn_norm": (d.hidden,), f"{i}.mlp_norm": (d.hidden,), f"{i}.qkv_bias": (d.qkv_width,),
                   f"{i}.q_norm": (d.head_dim,), f"{i}.k_norm": (d.head_dim,),
                   f"{i}.qkv": (d.qkv_width, d.hidden), f"{i}.o": (d.hidden, d.q_width),
                   f"{i}.gate_up": (2 * d.ffn, d.hidden), f"{i}.down": (d.hidden, d.ffn)}
    return shapes


def parts_of(config, floats: ModuleFloats) -> dict:
    """The kernel's matrices (Q8_0 of transformers' float weights) and float vectors by part name ("{i}.qkv",
    "{i}.attn_norm", ..., "embed", "head" (absent when tied), "norm"): what `assemble` lays out."""
    config = config.get_text_config()

    def floats_of(name: str) -> torch.Tensor:
        w = floats.get(name)
        if w is None:
            raise ValueError(f"the model has no weight {name}")
        return w.float().contiguous()

    def matrix(*names: str) -> QMatrix:
        return blocks.from_float(torch.cat([floats_of(n) for n in names]))

    parts: dict = {}
    for i in range(config.num_hidden_layers):
        at, ml = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
        biases = [floats.get(at + f"{x}_proj.bias") for x in "qkv"]
        parts |= {
            f"{i}.attn_norm": floats_of(f"model.layers.{i}.input_layernorm.weight"),
            f"{i}.qkv": matrix(at + "q_proj.weight", at + "k_proj.weight", at + "v_proj.weight"),
            f"{i}.o": matrix(at + "o_proj.weight"),
            f"{i}.mlp_norm": floats_of(f"model.layers.{i}.post_attention_layernorm.weight"),
            f"{i}.gate_up": matrix(ml + "gate_proj.weight", ml + "up_proj.weight"),
            f"{i}.down": matrix(ml + "down_proj.weight"),
        }
        if all(b is not None for b in biases):
            parts[f"{i}.qkv_bias"] = torch.cat([b.float() for b in biases])
    parts["embed"] = matrix("model.embed_tokens.weight")
    if not getattr(config, "tie_word_embeddings", False) and floats.has("lm_head.weight"):
        parts["head"] = matrix("lm_head.weight")  # else tied: one copy serves input and logits
    parts["norm"] = floats_of("model.norm.weight")
    return parts


def assemble(config, parts: dict, build: ModuleType | None = None, digits: Digits = TWO_DIGITS) -> NativeWeights:
    """The kernel's model over the parts, checked whole by `build` (default: the one that runs here);
    Unfit, with the kernel's reason, when any part does not fit the config's dimensions."""
    build = build or active_build()
    if build is None:
        raise Unfit(unavailable() or "the native kernel is not available")
    why = config_problem(config)
    if why is not None:
        raise Unfit(why)
    try:
        model = build.Model(**model_fields(config, parts, build, digits))
    except (KeyError, AttributeError) as exc:
        raise Unfit(f"the native weights lack a part ({exc})") from exc
    except (TypeError, ValueError) as exc:
        raise Unfit(str(exc).removeprefix("native: ")) from exc
    head = parts.get("head", parts["embed"])
    mats = matrices_of(parts)
    kinds = " + ".join(sorted({m.name for m in mats}))
    return NativeWeights(model, build, dims_of(config), head.rows, parts["embed"], head, kinds,
                         sum(m.nbytes for m in mats), parts, digits)


def matrices_of(parts: dict) -> list[QMatrix]:
    """Every matrix of the parts, a projection's side-by-side matrices one by one."""
    return [m for p in parts.values() for m in (p if isinstance(p, tuple) else (p,)) if isinstance(m, QMatrix)]


def model_fields(config, parts: dict, build: ModuleType, digits: Digits = TWO_DIGITS) -> dict:
    """build.Model's keywords (descriptor.MODEL_FIELDS) for the config's dimensions over the parts."""
    dims = dims_of(config)
    head = parts.get("head", parts["embed"])
    cos, sin, _ = rotary_tables(config, dims.head_dim, parts.get("rope_freqs"))

    def vec(name: str):
        part = parts.get(name)
        return None if part is None else part.numpy()

    def proj(name: str, digits: int):  # one matrix, or (q, k, v) / (gate, up) each in its file's block type
        part = parts[name]
        return tuple(m.native(build, digits) for m in part) if isinstance(part, tuple) else part.native(build, digits)

    layers = [{"attn_norm": vec(f"{i}.attn_norm"), "qkv": proj(f"{i}.qkv", digits.qkv),
               "qkv_bias": vec(f"{i}.qkv_bias"), "q_norm": vec(f"{i}.q_norm"), "k_norm": vec(f"{i}.k_norm"),
               "o": parts[f"{i}.o"].native(build, digits.o), "ffn_norm": vec(f"{i}.mlp_norm"),
               "gate_up": proj(f"{i}.gate_up", digits.gate_up), "down": parts[f"{i}.down"].native(build, digits.down)}
              for i in range(dims.layers)]
    fields = {"layers": dims.layers, "hidden": dims.hidden, "heads": dims.heads, "kv_heads": dims.kv_heads,
              "head_dim": dims.head_dim, "ffn": dims.ffn, "vocab": parts["embed"].rows, "max_positions": dims.max_positions,
              "eps": dims.eps, "cos": cos.numpy(), "sin": sin.numpy(), "norm": vec("norm"),
              "embed": parts["embed"].native(build), "head": head.native(build, digits.head), "parts": layers}
    return {name: fields[name] for name in MODEL_FIELDS}


def inv_freq(config, factors: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
    """(inv_freq [head_dim / 2] float32, attention scaling) as the family's rotary module computes them at init;
    factors: a GGUF's rope_freqs (llama.cpp's form of Llama 3.x's scaling), each frequency divided by its own."""
    rope = getattr(config, "rope_parameters", None) or {}
    kind = rope.get("rope_type", "default")
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if kind == "default" or factors is not None:
        base = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        return (base if factors is None else base / factors.float()), 1.0
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    freq, scaling = ROPE_INIT_FUNCTIONS[kind](config)
    return freq.float(), float(scaling)


def rotary_tables(config, head_dim: int, factors: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """cos, sin [positions, head_dim / 2] as transformers computes them (its inv_freq and attention scaling);
    factors: a GGUF's rope_freqs (Llama 3.x), each frequency divided by its own."""
    positions = dims_of(config).max_positions
    freq, scaling = inv_freq(config, factors)
    freqs = torch.arange(positions, dtype=torch.float32)[:, None] * freq[None, : head_dim // 2]
    return (freqs.cos() * scaling).contiguous(), (freqs.sin() * scaling).contiguous(), positions
