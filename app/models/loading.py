"""Load a target or draft model with its tokenizer from a spec string.

Specs: "default" (the embedded SmolLM2), a directory saved by save_pretrained, a .gguf
file, or a Hugging Face hub id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from .embedded import DEFAULT_SPEC, embedded_gguf
from .errors import ModelError, ModelNotFound


@dataclass
class LoadedModel:
    model: PreTrainedModel
    tokenizer: object
    name: str
    spec: str
    load_seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def vocab_size(self) -> int:
        """Real vocabulary: logits past len(tokenizer) are padding and get masked."""
        rows = self.model.get_output_embeddings().weight.shape[0]
        return min(rows, len(self.tokenizer))

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        ids: set[int] = set()
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return tuple(sorted(ids))

    def encode_chat(self, messages: list[dict[str, str]]) -> torch.Tensor:
        """Messages [{role, content}] -> input ids [L], through the model's chat template."""
        if getattr(self.tokenizer, "chat_template", None):
            enc = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_dict=True, return_tensors="pt"
            )
            return enc["input_ids"][0]
        # No template (base models): plain concatenation of the turns.
        text = "\n".join(m["content"] for m in messages)
        return self.tokenizer(text, return_tensors="pt")["input_ids"][0]


def default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def default_dtype(device: torch.device) -> torch.dtype:
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def load_model(
    spec: str = DEFAULT_SPEC,
    *,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    trust_remote_code: bool = False,
) -> LoadedModel:
    start = time.perf_counter()
    device = torch.device(device) if device is not None else default_device()
    dtype = dtype or default_dtype(device)
    kwargs: dict = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if spec == DEFAULT_SPEC:
        path = embedded_gguf()
        source, kwargs["gguf_file"], name = str(path.parent), path.name, "SmolLM2-135M-Instruct (embedded)"
    else:
        p = Path(spec).expanduser()
        if p.suffix == ".gguf":
            if not p.is_file():
                raise ModelNotFound(f"GGUF file not found: {p}")
            source, kwargs["gguf_file"], name = str(p.parent), p.name, p.stem
        elif p.exists():
            if not (p / "config.json").is_file():
                raise ModelNotFound(f"{p} is not a model directory (no config.json)")
            source, name = str(p), p.name
        else:
            source, name = spec, spec
    try:
        tok_kwargs = {k: v for k, v in kwargs.items() if k in ("gguf_file", "trust_remote_code")}
        tokenizer = AutoTokenizer.from_pretrained(source, **tok_kwargs)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs).to(device).eval()
    except OSError as exc:
        raise ModelNotFound(f"could not load {spec!r}: {exc}") from exc
    except ValueError as exc:
        raise ModelError(f"could not load {spec!r}: {exc}") from exc
    return LoadedModel(model, tokenizer, name, spec, time.perf_counter() - start)
