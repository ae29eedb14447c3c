"""Will it fit? Estimate before loading, so a too-large model is refused instead of freezing the machine."""

from __future__ import annotations

import gc
from dataclasses import dataclass

import psutil
import torch

from app.errors import OutOfMemory

GIB = 2**30
# Activations, KV cache and allocator slack on top of the weights themselves.
OVERHEAD = 1.15
HEADROOM_BYTES = 512 * 2**20


@dataclass(frozen=True)
class Placement:
    device_map: str | dict | None  # None: load then .to(device); "auto": accelerate spreads the layers
    warning: str = ""


def weight_bytes(parameters: int, dtype: torch.dtype) -> int:
    return int(parameters * torch.empty((), dtype=dtype).element_size() * OVERHEAD) + HEADROOM_BYTES


def free_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device.index if device.index is not None else 0)[0]
    # MPS shares system memory; psutil's "available" counts reclaimable cache, which is what can be used.
    return psutil.virtual_memory().available


def plan(needed: int, device: torch.device, name: str) -> Placement:
    """Where the weights go, or OutOfMemory naming the sizes when nothing can hold them."""
    if needed <= free_bytes(device):
        return Placement(None)
    ram = psutil.virtual_memory().available
    if device.type == "cuda":
        gpus = sum(torch.cuda.mem_get_info(i)[0] for i in range(torch.cuda.device_count()))
        if torch.cuda.device_count() > 1 and needed <= gpus:
            return Placement("auto")
        if needed <= gpus + ram:
            return Placement("auto", f"{name} does not fit in GPU memory ({_gib(gpus)} free); part of it is "
                                     "offloaded to CPU RAM, which makes every step much slower")
    raise OutOfMemory(
        f"{name} needs about {_gib(needed)} but only {_gib(free_bytes(device))} is free on {device}"
        + ("" if device.type == "cpu" else f" ({_gib(ram)} RAM)")
        + "; close other programs, pick a smaller or quantised model, or another device"
    )


def release() -> None:
    """Give back what a failed load allocated so the app stays usable."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError | torch.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()
    )


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"
