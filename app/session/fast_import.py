"""The seconds of imports a model load needs (torch, transformers, SpecLens's loading code), as one call that any
thread may make, marking each stage for `speclens bench --startup`.

Measured with `python -X importtime` (transformers 5.24, torch 2.13 CPU): torch 0.73 s, transformers 0.43 s,
and transformers.modeling_utils ~1.7 s, of which torch.distributed.tensor 0.52 s, scipy.optimize 0.42 s
(object-detection losses) and torch._dynamo 0.26 s (fp8 kernels) are never used by SpecLens. modeling_utils
imports all of them unconditionally and every model class (and every family's config class) imports
them, so the model classes are not imported here: a load imports them where it builds transformers' model,
and a light native load (native/light.py), the usual second launch on a CPU, never does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app import startup_trace

_done = threading.Event()
_lock = threading.Lock()


def import_model_stack(progress: Callable[[float], None] | None = None) -> None:
    """Import torch, transformers, the tokenizer classes and SpecLens's loading code (idempotent, thread-safe),
    marking each stage; progress gets the fraction done after each (by their measured share)."""
    if _done.is_set():
        return
    report = progress or (lambda _fraction: None)
    with _lock:  # a second caller waits for the first instead of racing it through the same imports
        if _done.is_set():
            return
        import torch  # noqa: F401

        startup_trace.mark("torch")
        report(0.25)
        import transformers  # noqa: F401

        startup_trace.mark("transformers")
        report(0.4)
        from transformers import AutoTokenizer  # noqa: F401

        from app.drafting import auto as calibration  # noqa: F401  the app's own modules over torch, for the load

        startup_trace.mark("classes")
        report(1.0)
        _done.set()
