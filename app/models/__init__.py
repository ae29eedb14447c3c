"""Model loading, the embedded default, draft construction. No Qt here."""

from .drafts import PROMPT_LOOKUP, SELF_DRAFT, make_drafter, self_draft
from .embedded import DEFAULT_SPEC, embedded_gguf
from .errors import EmbeddedModelMissing, IncompatibleModels, ModelError, ModelNotFound
from .loading import LoadedModel, default_device, default_dtype, load_model

__all__ = [
    "DEFAULT_SPEC",
    "PROMPT_LOOKUP",
    "SELF_DRAFT",
    "EmbeddedModelMissing",
    "IncompatibleModels",
    "LoadedModel",
    "ModelError",
    "ModelNotFound",
    "default_device",
    "default_dtype",
    "embedded_gguf",
    "load_model",
    "make_drafter",
    "self_draft",
]
