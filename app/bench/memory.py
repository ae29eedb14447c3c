"""Peak memory of one generation (RSS sampled on a thread for CPUs, the allocator's peak on CUDA), the
memory each model holds, and the device sync every timer around GPU work ends with."""

from __future__ import annotations

import threading

import psutil
import torch

POLL_SECONDS = 0.02  # ~20 us of work per poll: well under 0.1% of a generation


class PeakMemory:
    """Context manager; after exit, `.peak_mib` is the highest RSS (CPU) or allocated memory (CUDA)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.device = device
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process = psutil.Process()

    def __enter__(self) -> PeakMemory:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.peak_bytes = self._process.memory_info().rss
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.peak_bytes = max(self.peak_bytes, self._process.memory_info().rss)

    def __exit__(self, *exc) -> None:
        if self.cuda:
            self.peak_bytes = torch.cuda.max_memory_allocated(self.device)
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_bytes = max(self.peak_bytes, self._process.memory_info().rss)

    @property
    def peak_mib(self) -> float:
        return self.peak_bytes / 2**20


def model_mib(model) -> float:
    """Weights and buffers of one model, in MiB: the per-model part of the peak (on the native path the
    float weights transformers loaded stay beside the kernel's blocks, so both count)."""
    backend = getattr(model, "cache_backend", None)
    native = backend.weights.nbytes if backend is not None and hasattr(backend, "weights") else 0
    tensors = [*model.parameters(), *model.buffers()]
    return (native + sum(t.numel() * t.element_size() for t in tensors)) / 2**20
