"""SpecLens engine: exact speculative decoding over transformers models. No Qt here."""

from .decode import ContextLengthError, accept, decode, speculative_step, verify
from .drafters import Drafter, ModelDrafter, PromptLookupDrafter
from .events import Event, FinishedEvent, RoundEvent, Status, TokenEvent, Top, TopEntries
from .result import Result, generate
from .sampling import DecodeParams, logits_to_probs, sample
from .stats import Summary, predicted_speedup, summarize
from .text import StreamDetokenizer

__all__ = [
    "ContextLengthError",
    "DecodeParams",
    "Drafter",
    "Event",
    "FinishedEvent",
    "ModelDrafter",
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
