"""SpecLens engine: exact speculative decoding over transformers models. No Qt here.

Events and parameters are plain data and load at once. Everything else needs torch and transformers,
seconds of imports, so it loads on first use (PEP 562): the window shows before that time is spent.
"""

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from .events import Event, FinishedEvent, RoundEvent, Status, TokenEvent, Top, TopEntries
from .params import DecodeParams

_LAZY = {
    "ContextLengthError": "decode", "NonFiniteError": "decode", "accept": "decode", "decode": "decode",
    "speculative_step": "decode", "verify": "decode",
    "Drafter": "drafters", "ModelDrafter": "drafters", "PromptLookupDrafter": "drafters",
    "Result": "result", "generate": "result",
    "logits_to_probs": "sampling", "sample": "sampling",
    "Summary": "stats", "predicted_speedup": "stats", "summarize": "stats",
    "StreamDetokenizer": "text",
}

if TYPE_CHECKING:
    from .decode import ContextLengthError, NonFiniteError, accept, decode, speculative_step, verify
    from .drafters import Drafter, ModelDrafter, PromptLookupDrafter
    from .result import Result, generate
    from .sampling import logits_to_probs, sample
    from .stats import Summary, predicted_speedup, summarize
    from .text import StreamDetokenizer


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # later lookups do not come here
    return value


class _Package(ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # Importing the submodule `decode` binds it here by name, over the function `decode`: as with
        # the eager `from .decode import decode` this package had, the function wins.
        if isinstance(value, ModuleType) and name in _LAZY and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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


def __dir__() -> list[str]:
    return __all__
