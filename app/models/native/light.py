"""A GGUF's native model without transformers' model classes: what a launch loads when this file's cached
profile already chose the native path, so it imports neither the model classes (~2 s) nor builds their
float32 matrices (~540 MB for the embedded model).

The first load of a file (transformers' model, the path timed, the quality measured) leaves a record in
its conversion-cache folder: the model's fingerprint and weight count, which key its machine profile. A
later load reads the config, generation config and the embedding's float rows (which a feature draft reads)
from that folder, and the kernel's weights as the first load laid them out (stored.py), or, where they are
not stored, the GGUF's own blocks, checked against the folder's floats. The first load itself ends as this
model too (from_module), its float32 module released.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from .. import conversion_cache
from . import stored
from .backend import NativeBackend
from .build import SafetensorsFloats, assemble, inv_freq, parts_of

RECORD = "speclens-native.json"


@dataclass(frozen=True)
class Record:
    fingerprint: str  # cost_cache.model_fingerprint of the model transformers loaded
    weight_count: int
    architecture: str  # its class, which a trained draft's fingerprint names (feature_format.fingerprint)


def write_record(folder: Path, record: Record) -> None:
    """Kept beside the converted weights (a failure only means the next launch loads transformers' model)."""
    tmp = folder / f".{RECORD}.{os.getpid()}.tmp"  # then renamed: a launch reading it never sees half of it
    try:
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
        tmp.replace(folder / RECORD)
    except OSError:
        tmp.unlink(missing_ok=True)


def find(gguf: Path) -> tuple[Path, Record] | None:
    """(its conversion-cache folder, its record) where a first load of this GGUF left both, else None."""
    folder = conversion_cache.lookup(gguf)
    record = read_record(folder) if folder is not None else None
    return None if record is None else (folder, record)


def read_record(folder: Path) -> Record | None:
    try:
        return Record(**json.loads((folder / RECORD).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


class Rotary(nn.Module):
    """(cos, sin) of positions as the llama/mistral/qwen2 rotary module computes them (the families the kernel
    runs, none with position-dependent scaling), from the same inv_freq the kernel's tables use."""

    def __init__(self, config) -> None:
        super().__init__()
        self.inv_freq, self.attention_scaling = inv_freq(config)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device)  # [b, n, head_dim / 2]
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


class NativeCausalLM(nn.Module):
    """What SpecLens reads of a transformers causal LM, over the native backend: config and generation config,
    the float32 input rows (tied to the head), rotary on demand (feature drafts), and `speclens_backend`,
    through which the engine makes every pass. It has no forward of its own: transformers' code paths
    (distillation, HF's generate) load transformers' model (`loading.with_transformers`)."""

    def __init__(self, config, generation_config, embed: torch.Tensor, head: torch.Tensor | None,
                 backend: NativeBackend, record: Record, gguf: Path) -> None:
        super().__init__()
        text = config.get_text_config()
        # the class transformers' model had, which a trained draft's fingerprint names (feature_format.fingerprint)
        config.architectures = getattr(config, "architectures", None) or [record.architecture]
        self.config, self.generation_config = config, generation_config
        self.embed_tokens = nn.Embedding(*embed.shape, _weight=embed, _freeze=True)
        self.lm_head = nn.Linear(text.hidden_size, embed.shape[0] if head is None else head.shape[0], bias=False,
                                 device="meta")
        self.lm_head.weight = self.embed_tokens.weight if head is None else nn.Parameter(head, requires_grad=False)
        self.speclens_backend = backend
        self.speclens_kernels = f"{backend.weights.kinds} · native"
        self.speclens_gguf = gguf
        self.speclens_fingerprint, self.speclens_weight_count = record.fingerprint, record.weight_count
        self._rotary: Rotary | None = None

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    @property
    def base_model(self) -> NativeCausalLM:
        return self

    @property
    def rotary_emb(self) -> Rotary:
        """The rotary module a feature draft calls (made on first use)."""
        if self._rotary is None:
            self._rotary = Rotary(self.config.get_text_config())
        return self._rotary

    def forward(self, *args, **kwargs):
        raise TypeError("the light native model runs through app.engine (kv.backend_for); "
                        "transformers' code paths need transformers' model (app.models.loading.with_transformers)")


def config_of(folder: Path, record: Record):
    """The folder's config as transformers' base class reads it: the family's own class would import the model
    classes' dependencies (~1 s); the native kernel reads only the fields every family's config.json holds."""
    from transformers import PreTrainedConfig
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()  # the base class warns that it is not the family's class: it is meant not to be
    try:
        config = PreTrainedConfig.from_pretrained(folder)
    finally:
        logging.set_verbosity(level)
    return config


def load(folder: Path, gguf: Path, record: Record, config) -> NativeCausalLM:
    """The native model of `gguf` from its conversion-cache folder (config_of, generation config, float rows)."""
    from transformers import GenerationConfig

    generation = GenerationConfig.from_pretrained(folder)
    tied = bool(getattr(config.get_text_config(), "tie_word_embeddings", False))
    floats = SafetensorsFloats(folder / "model.safetensors", tied)
    parts = stored.load(folder)
    if parts is None:
        parts = parts_of(config, floats, gguf)
        stored.save(folder, parts)
    weights = assemble(config, parts)
    embed = floats.get("model.embed_tokens.weight").float()
    head = None if tied or not floats.has("lm_head.weight") else floats.get("lm_head.weight").float()
    return NativeCausalLM(config, generation, embed, head, NativeBackend(weights), record, gguf).eval()


def from_module(model: nn.Module, folder: Path, record: Record) -> NativeCausalLM:
    """A transformers model already on the native path (model.attach) as the light model, keeping its kernel
    weights and its float rows: the rest of its float32 module is released with it."""
    if not stored.path_in(folder).is_file():
        stored.save(folder, model.speclens_backend.weights.parts)  # what the next launch reads instead of building
    embed = model.get_input_embeddings().weight.detach()
    head = model.get_output_embeddings().weight.detach()
    light = NativeCausalLM(model.config, model.generation_config, embed, None if head.data_ptr() == embed.data_ptr()
                           else head, model.speclens_backend, record, model.speclens_gguf)
    return light.eval()


def is_light(model: nn.Module) -> bool:
    return isinstance(model, NativeCausalLM)
