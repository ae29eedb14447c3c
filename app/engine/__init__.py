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
    "Drafter": "drafters", "ModelDrafter": "drafters", "PromptLookupDrafter": "drafters",
    "Result": "result", "generate": "result",
    "DynamicRounds": "rounds", "Round": "rounds", "Rounds": "rounds",
    "logits_to_probs": "sampling", "sample": "sampling",
    "Summary": "stats", "predicted_speedup": "stats", "summarize": "stats",
    "StreamDetokenizer": "text",
}

if TYPE_CHECKING:
    from .acceptance import NonFiniteError, Verdict, accept, decide
    from .decoding import ContextLengthError, decode
    from .drafters import Drafter, ModelDrafter, PromptLookupDrafter
    from .result import Result, generate
    from .rounds import DynamicRounds, Round, Rounds
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
    "DynamicRounds",
    "Event",
    "FinishedEvent",
    "ModelDrafter",
    "NonFiniteError",
    "PromptLookupDrafter",
    "Result",
    "Round",
    "RoundEvent",
    "Rounds",
    "Status",
    "StreamDetokenizer",
    "Summary",
    "TokenEvent",
    "Top",
    "TopEntries",
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
