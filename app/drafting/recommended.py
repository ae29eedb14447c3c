"""Recommended real pairs: larger SmolLM2 targets that share the embedded model's tokenizer, so the
embedded SmolLM2-135M drafts for them. Sizes are what the hub serves; memory is estimated the way
loading plans it (weights in the device's dtype plus overhead). No Qt here."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from app.models import memory
from app.models.devices import default_dtype
from app.models.embedded import DEFAULT_SPEC
from app.models.hub import offline_mode

EMBEDDED_PARAMETERS = 134_515_008  # SmolLM2-135M


@dataclass(frozen=True)
class RecommendedPair:
    target: str  # hub id, or a local folder (tests)
    name: str
    parameters: int
    download_bytes: int  # safetensors and tokenizer files as served (bf16 weights)
    draft: str = DEFAULT_SPEC
    note: str = ""

    def memory_bytes(self, device: torch.device) -> int:
        """Target and embedded draft, both in the dtype the app loads on `device`."""
        dtype = default_dtype(device)
        return memory.weight_bytes(self.parameters, dtype) + memory.weight_bytes(EMBEDDED_PARAMETERS, dtype)


PAIRS = (
    RecommendedPair("HuggingFaceTB/SmolLM2-360M-Instruct", "SmolLM2-360M-Instruct", 361_821_120, 724_000_000,
                    note="2.7× the embedded model: a modest gain on a CPU, more on a GPU"),
    RecommendedPair("HuggingFaceTB/SmolLM2-1.7B-Instruct", "SmolLM2-1.7B-Instruct", 1_711_376_384, 3_423_000_000,
                    note="13× the embedded model: where speculative decoding shines"),
)


def is_downloaded(spec: str) -> bool:
    """A local folder, or a hub id whose files are in the local Hugging Face cache (nothing is fetched)."""
    from pathlib import Path

    if Path(spec).expanduser().is_dir():
        return True
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(spec, local_files_only=True, allow_patterns=["*.json", "*.safetensors"])
    except Exception:  # not cached (or a damaged cache entry): it has to be downloaded
        return False
    return True


def availability(pair: RecommendedPair) -> str:
    """"downloaded", "download" (online), or "offline" (not cached and the hub is off)."""
    if is_downloaded(pair.target):
        return "downloaded"
    return "offline" if offline_mode() else "download"
