"""Collecting a run while it happens, and the facts about the machine and the models that go in
the header. Nothing here imports torch; the model fingerprint only calls methods of the model."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time

from app import __version__

from .format import Run, Step


class RunBuilder:
    """Fed with what the worker signals deliver, in the order and at the moment they arrive."""

    def __init__(self, info: dict, clock=time.monotonic) -> None:
        self.clock = clock
        self.t0 = clock()
        self.run = Run(dict(info))
        self._events: list = []

    def now(self) -> float:
        return round(self.clock() - self.t0, 6)

    def baseline(self, seconds_per_step: float) -> None:
        self.run.baseline, self.run.baseline_t = seconds_per_step, self.now()

    def events(self, batch: list) -> None:
        """A batch from GenerationWorker.events: tokens, closed by the round's RoundEvent."""
        self._events.extend(batch)
        if self._events and type(self._events[-1]).__name__ == "RoundEvent":
            self.run.steps.append(Step(self.now(), tuple(self._events)))
            self._events = []

    def finished(self, event) -> None:
        self.run.finished, self.run.finished_t = event, self.now()


def machine_info(device: str | None = None) -> dict:
    info = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "speclens": __version__,
    }
    torch = sys.modules.get("torch")  # reported when loaded, never imported for it
    if torch is not None:
        info["torch"] = torch.__version__
        info["threads"] = torch.get_num_threads()
    if device:
        info["device"] = device
    return info


def header(kind: str, title: str, device: str | None) -> dict:
    """The first line's facts: what this is, when, from which version, on what machine."""
    return {"kind": kind, "title": title, "created": time.time(), "app_version": __version__,
            "machine": machine_info(device)}


def drafter_info(drafter) -> dict | None:
    if drafter is None:
        return None
    info = {"name": drafter.name}
    model = getattr(drafter, "model", None)
    if model is not None:
        info["fingerprint"] = model_fingerprint(model)
        info["dtype"] = str(next(model.parameters()).dtype).removeprefix("torch.")
    return info


def top_vocab(run, tokenizer) -> dict[str, str]:
    """Text of every token id in the top-entry lists and the token trees, so the inspector and the tree
    view name them in a replay."""
    ids = {tid for step in run.steps for e in step.events if getattr(e, "top", None)
           for entries in (e.top.p, e.top.q, e.top.residual) for tid, _ in entries}
    ids |= {tid for step in run.steps for tid in step.round.tree_tokens}
    return {str(tid): tokenizer.decode([tid]) for tid in sorted(ids)}


def model_info(loaded) -> dict:
    """Name, spec, dtype and a fingerprint of a LoadedModel (see model_fingerprint)."""
    return {
        "name": loaded.name,
        "spec": loaded.spec,
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "kernels": loaded.kernels,
        "fingerprint": model_fingerprint(loaded.model),
    }


_FINGERPRINTS: dict[int, tuple[object, str]] = {}


def model_fingerprint(model) -> str:
    """sha256 over the config, the parameter shapes and the first values of the first and last
    parameters: cheap, and different for different weights. Cached per model object."""
    cached = _FINGERPRINTS.get(id(model))
    if cached is not None and cached[0] is model:
        return cached[1]
    digest = hashlib.sha256()
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "to_dict"):
        digest.update(json.dumps(config.to_dict(), sort_keys=True, default=str).encode())
    params = list(model.named_parameters())
    for name, p in params:
        digest.update(f"{name}{tuple(p.shape)}".encode())
    for _, p in params[:1] + params[-1:]:
        digest.update(p.detach().flatten()[:4096].float().cpu().numpy().tobytes())
    value = digest.hexdigest()[:16]
    _FINGERPRINTS[id(model)] = (model, value)
    return value
