"""SpecLens engine: exact speculative decoding over transformers models. No Qt here.

Names are imported on first use (PEP 562): `from app.engine import RoundEvent` loads only the
events module, so a recording plays without importing torch; decode() and friends bring torch in.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

_WHERE = {
    "ContextLengthError": "decode", "NonFiniteError": "decode", "accept": "decode", "decode": "decode",
    "speculative_step": "decode", "verify": "decode",
    "Drafter": "drafters", "ModelDrafter": "drafters", "PromptLookupDrafter": "drafters",
    "Event": "events", "FinishedEvent": "events", "RoundEvent": "events", "Status": "events",
    "TokenEvent": "events", "Top": "events", "TopEntries": "events",
    "Result": "result", "generate": "result",
    "DecodeParams": "sampling", "logits_to_probs": "sampling", "sample": "sampling",
    "Summary": "stats", "predicted_speedup": "stats", "summarize": "stats",
    "StreamDetokenizer": "text",
}

__all__ = [
    "ContextLengthError",
    "DecodeParams",
    "Drafter",
    "Event",
    "FinishedEvent",
    "ModelDrafter",
    "NonFiniteError",
    "PromptLookupDrafter",
    "Result",
    "RoundEvent",
    "Status",
    "StreamDetokenizer",
    "Summary",
    "TokenEvent",
    "Top",
    "TopEntries",
    "accept",
    "decode",
    "generate",
    "logits_to_probs",
    "predicted_speedup",
    "sample",
    "speculative_step",
    "summarize",
    "verify",
]


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'app.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # Loading the submodule `decode` binds it on the package; the name means the function, as
        # it did when this package imported everything eagerly.
        if name == "decode" and isinstance(value, types.ModuleType):
            value = value.decode
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:
    from .decode import ContextLengthError, accept, decode, speculative_step, verify
    from .drafters import Drafter, ModelDrafter, PromptLookupDrafter
    from .events import Event, FinishedEvent, RoundEvent, Status, TokenEvent, Top, TopEntries
    from .result import Result, generate
    from .sampling import DecodeParams, logits_to_probs, sample
    from .stats import Summary, predicted_speedup, summarize
    from .text import StreamDetokenizer
