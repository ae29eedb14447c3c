"""Turn a draft spec into a Drafter for a loaded target."""

from __future__ import annotations

import copy

import torch

from app.engine import Drafter, ModelDrafter, PromptLookupDrafter

from .loading import LoadedModel, load_model

PROMPT_LOOKUP = "prompt-lookup"
SELF_DRAFT = "self"


def reduced_dtype(device: torch.device) -> torch.dtype:
    """The next cheaper dtype for a self-draft: bfloat16 on CPU, float16/8-bit-free on GPUs."""
    if device.type == "cpu":
        return torch.bfloat16
    return torch.float16


def self_draft(target: LoadedModel) -> ModelDrafter:
    """A reduced-precision copy of the target: shares no tensors, so nothing mutable is shared."""
    model = copy.deepcopy(target.model).to(reduced_dtype(target.device)).eval()
    return ModelDrafter(model, name=f"{target.name} ({str(model.dtype).removeprefix('torch.')} self-draft)")


def make_drafter(spec: str | None, target: LoadedModel, **load_kwargs) -> Drafter | None:
    if spec in (None, "", "none"):
        return None
    if spec == PROMPT_LOOKUP:
        return PromptLookupDrafter()
    if spec == SELF_DRAFT:
        return self_draft(target)
    draft = load_model(spec, device=load_kwargs.pop("device", target.device), **load_kwargs)
    return ModelDrafter(draft.model, name=draft.name)
