"""SpecLens engine: exact speculative decoding over transformers models. No Qt here.

Events and parameters are plain data and load at once. Everything else needs torch and transformers,
seconds of imports, so it loads on first use (PEP 562): the window shows before that time is spent.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from .events import Event, FinishedEvent, RoundEvent, Status, TokenEvent, Top, TopEntries
from .params import DecodeParams

_LAZY = {
    "NonFiniteError": "acceptance", "Verdict": "acceptance", "accept": "acceptance", "decide": "acceptance",
    "ContextLengthError": "decoding", "decode": "decoding",
    "ModelDrafter": "drafters", "PromptLookupDrafter": "drafters",
    "Drafter": "protocols", "Round": "protocols", "TreeDrafter": "protocols", "Unsupported": "protocols",
    "Result": "result", "generate": "result",
    "logits_to_probs": "sampling", "sample": "sampling",
    "Summary": "stats", "predicted_speedup": "stats", "summarize": "stats",
    "StreamDetokenizer": "text",
}

if TYPE_CHECKING:
    from .acceptance import NonFiniteError, Verdict, accept, decide
    from .decoding import ContextLengthError, decode
    from .drafters import ModelDrafter, PromptLookupDrafter
    from .protocols import Drafter, Round, TreeDrafter, Unsupported
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
    "Round",
    "RoundEvent",
    "Status",
    "StreamDetokenizer",
    "Summary",
    "TokenEvent",
    "Top",
    "TopEntries",
    "TreeDrafter",
    "Unsupported",
    "Verdict",
    "accept",
    "decide",
    "decode",
    "generate",
    "logits_to_probs",
    "predicted_speedup",
    "sample",
    "summarize",
]


def __dir__() -> list[str]:
    return __all__
