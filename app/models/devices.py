"""Automatic device and dtype choice, and the cheaper dtype a self-draft uses."""

from __future__ import annotations

import torch


def default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def default_dtype(device: torch.device) -> torch.dtype:
    """The target's dtype: bf16 on CUDA where supported else fp16, fp16 on MPS, fp32 on CPU."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def reduced_dtype(dtype: torch.dtype, device: torch.device) -> torch.dtype:
    """The next cheaper dtype for a self-draft: bfloat16 on CPU, otherwise one step below the target's."""
    if device.type == "cpu":
        return torch.bfloat16
    if dtype == torch.float32:
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float16
    # Already 16-bit on a GPU: there is no cheaper float dtype every kernel supports, so keep it.
    return dtype


def parse_device(device: str | torch.device | None) -> torch.device:
    if device is None or device == "auto":
        return default_device()
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"unknown device {device!r}: use cpu, cuda, cuda:N or mps") from exc
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available on this machine")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ValueError(f"device {device!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("device 'mps' requested but MPS is not available on this machine")
    return parsed
