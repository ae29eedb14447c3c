"""The native model: one typed object that owns everything the native path holds (its backend over the
kernel's checked Model, the label people read, the file its blocks came from, the fingerprint of the
transformers model it was made from), made from transformers' model on a first load (from_transformers)
or from the conversion cache on a later one (light.py). Nothing native hangs on a transformers model."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from app.native import build_label
from app.native.backend import NativeBackend
from app.native.build import from_transformers as weights_of
from app.native.build import inv_freq
from app.native.descriptor import TWO_DIGITS, Digits
from app.native.record import Record, fingerprint


class Rotary(nn.Module):
    """(cos, sin) of positions as the llama/mistral/qwen2 rotary module computes them (the families the kernel
    runs, none with position-dependent scaling), from the same inv_freq the kernel's tables use."""

    def __init__(self, config, factors=None) -> None:
        super().__init__()
        self.inv_freq, self.attention_scaling = inv_freq(config, factors)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device)  # [b, n, head_dim / 2]
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


class KernelRows(nn.Module):
    """A kernel matrix's rows as floats, for what reads an embedding or a head's rows (a feature draft, a
    fingerprint): a lookup dequantises only the rows asked for; `weight` the whole matrix, made on first use,
    so a model that no draft reads never holds its float rows (4 bytes a weight: 400 MB for a 1.7B vocabulary)."""

    def __init__(self, matrix, build) -> None:
        super().__init__()
        self.matrix, self.build = matrix, build
        self.num_embeddings = self.out_features = matrix.rows
        self.embedding_dim = self.in_features = matrix.k
        self._weight: torch.Tensor | None = None

    @property
    def weight(self) -> torch.Tensor:
        if self._weight is None:
            self._weight = self.lookup(torch.arange(self.num_embeddings))
        return self._weight

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        flat = ids.reshape(-1).to(torch.int64).contiguous()
        out = torch.empty(len(flat), self.embedding_dim)
        self.build.rows(self.matrix.native(self.build), flat.numpy(), out.numpy())
        return out.view(*ids.shape, self.embedding_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lookup(ids)


class NativeCausalLM(nn.Module):
    """A model on the native kernel: what SpecLens reads of a transformers causal LM (config and generation
    config, the float32 input rows tied to the head, rotary on demand for feature drafts) over the native
    backend (`cache_backend`), through which the engine makes every pass. It has no forward of its own:
    transformers' code paths (distillation, HF's generate) load transformers' model
    (`loading.with_transformers`)."""

    def __init__(self, config, generation_config, embed: torch.Tensor | None, head: torch.Tensor | None,
                 backend: NativeBackend, record: Record, gguf: Path | None) -> None:
        """embed, head: float rows the caller already holds (transformers' model's), else None: the kernel's
        rows on demand (KernelRows); head None with an embed: tied."""
        super().__init__()
        text = config.get_text_config()
        # the class transformers' model had, which a trained draft's fingerprint names (feature_format.fingerprint)
        config.architectures = getattr(config, "architectures", None) or [record.architecture]
        self.config, self.generation_config = config, generation_config
        weights = backend.weights
        # An empty float32 parameter on the CPU: what code that asks a model's device and dtype
        # (next(model.parameters())) reads, whether or not the model holds float rows.
        self.place = nn.Parameter(torch.empty(0), requires_grad=False)
        if embed is None:
            self.embed_tokens: nn.Module = KernelRows(weights.embed, weights.build)
            self.lm_head: nn.Module = (self.embed_tokens if weights.head is weights.embed
                                       else KernelRows(weights.head, weights.build))
        else:
            self.embed_tokens = nn.Embedding(*embed.shape, _weight=embed, _freeze=True)
            self.lm_head = nn.Linear(text.hidden_size, embed.shape[0] if head is None else head.shape[0], bias=False,
                                     device="meta")
            self.lm_head.weight = self.embed_tokens.weight if head is None else nn.Parameter(head, requires_grad=False)
        self.cache_backend = backend  # the engine's every pass (kv.backend_for)
        # for people: "Q4_1 + Q8_0 · native (AVX2, Linux x86-64)", "… · native (generic C, macOS arm64) · 1 digit"
        digits = backend.weights.digits
        self.kernels = (f"{backend.weights.kinds} · native ({build_label(backend.weights.build)})"
                        + (f" · {digits.label()}" if digits.code else ""))
        self.gguf = gguf  # the file its blocks came from, or None (float weights made Q8_0)
        # what transformers' model of it gave: its machine profile's key, a trained draft's fingerprint
        self.fingerprint, self.weight_count = record.fingerprint, record.weight_count
        self._rotary: Rotary | None = None

    def get_input_embeddings(self) -> nn.Module:
        return self.embed_tokens

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    @property
    def base_model(self) -> NativeCausalLM:
        return self

    @property
    def rotary_emb(self) -> Rotary:
        """The rotary module a feature draft calls (made on first use)."""
        if self._rotary is None:
            self._rotary = Rotary(self.config.get_text_config(), self.cache_backend.weights.parts.get("rope_freqs"))
        return self._rotary

    def forward(self, *args, **kwargs):
        raise TypeError("the native model runs through app.engine (kv.backend_for); "
                        "transformers' code paths need transformers' model (app.models.loading.with_transformers)")



def from_transformers(model: nn.Module, build=None, digits: Digits = TWO_DIGITS) -> NativeCausalLM:
    """transformers' model (a folder's or the hub's float weights) on the native path, as Q8_0; keeps its float
    input (and head) rows, nothing else of the module. descriptor.Unfit when the kernel does not run it. A
    GGUF is read straight from its file instead (direct.py)."""
    weights = weights_of(model, build, digits)
    architecture = (getattr(model.config, "architectures", None) or [type(model).__name__])[0]
    count = sum(p.numel() for p in model.parameters())  # transformers' model as loaded: no packed linears
    record = Record(fingerprint(model, count), count, architecture)
    embed = model.get_input_embeddings().weight.detach()
    head = model.get_output_embeddings().weight.detach()
    native = NativeCausalLM(model.config, model.generation_config, embed,
                            None if head.data_ptr() == embed.data_ptr() else head, NativeBackend(weights), record, None)
    return native.eval()


def with_digits(native: NativeCausalLM, digits: Digits) -> NativeCausalLM:
    """The same model multiplying other activation digits: its parts, in a new kernel Model."""
    from app.native.build import assemble

    weights = native.cache_backend.weights
    if digits == weights.digits:
        return native
    record = Record(native.fingerprint, native.weight_count, native.config.architectures[0])
    backend = NativeBackend(assemble(native.config, weights.parts, weights.build, digits))
    return NativeCausalLM(native.config, native.generation_config, None, None, backend, record, native.gguf).eval()


def with_head_rows(native: NativeCausalLM, vocab_ids: torch.Tensor) -> NativeCausalLM:
    """The same model whose head QMatrix holds only the rows vocab_ids [K] of its own (a draft over a token
    subset: each pass reads K head rows, its logits [K]): the kernel's rows of those tokens as Q8_0, as a
    feature draft's reduced head is made (draft.NativeLinear), in a new kernel Model over the same other
    parts and digits. A Q8_0 head's rows come back bit for bit; a K-type head's are re-blocked to Q8_0."""
    from app.native import blocks
    from app.native.build import assemble

    weights = native.cache_backend.weights
    rows = KernelRows(weights.head, weights.build).lookup(vocab_ids.to(torch.long))  # [K, H] float32
    parts = dict(weights.parts) | {"head": blocks.from_float(rows)}
    record = Record(native.fingerprint, native.weight_count, native.config.architectures[0])
    backend = NativeBackend(assemble(native.config, parts, weights.build, weights.digits))
    return NativeCausalLM(native.config, native.generation_config, None, None, backend, record, native.gguf).eval()


def is_native(model: nn.Module) -> bool:
    return isinstance(model, NativeCausalLM)
