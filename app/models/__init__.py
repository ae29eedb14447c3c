"""Model loading, the embedded default, draft construction, pre-flight and catalog. No Qt here.

Errors, specs, progress, the catalog and the pre-flight load at once; loading, drafts and devices need
torch and transformers and load on first use (PEP 562), so the window shows before those imports.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from app.models.catalog import CatalogEntry, compatible_drafts, list_catalog
from app.models.compat import Compatibility, check_compatibility, check_tokenizers, ensure_compatible
from app.models.embedded import DEFAULT_SPEC, embedded_gguf
from app.models.errors import (
    CorruptModel,
    EmbeddedModelMissing,
    IncompatibleModels,
    LoadCancelled,
    ModelError,
    ModelNotFound,
    NotAModel,
    NotCached,
    OutOfMemory,
    PickleOnly,
    RemoteCodeRequired,
    UnsupportedArchitecture,
)
from app.models.progress import LoadProgress, ProgressCallback
from app.models.specs import AUTO, NO_DRAFT, PROMPT_LOOKUP, SELF_DRAFT, TRAINED_DRAFT

# Everything below needs torch and transformers (seconds of imports): loaded on first use, so the
# window shows first.
_LAZY = {
    "default_device": "devices", "default_dtype": "devices", "reduced_dtype": "devices",
    "make_drafter": "drafts", "self_draft": "drafts",
    "LoadedModel": "loading", "load_model": "loading",
    "TrainedDraftInfo": "trained_drafts", "default_output_dir": "trained_drafts",
    "find_trained_draft": "trained_drafts", "is_trained_draft": "trained_drafts",
    "list_trained_drafts": "trained_drafts", "load_trained_draft": "trained_drafts",
}

if TYPE_CHECKING:
    from app.models.devices import default_device, default_dtype, reduced_dtype
    from app.models.drafts import make_drafter, self_draft
    from app.models.loading import LoadedModel, load_model
    from app.models.trained_drafts import (
        TrainedDraftInfo,
        default_output_dir,
        find_trained_draft,
        is_trained_draft,
        list_trained_drafts,
        load_trained_draft,
    )


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # later lookups do not come here
    return value


__all__ = [
    "AUTO",
    "DEFAULT_SPEC",
    "NO_DRAFT",
    "PROMPT_LOOKUP",
    "SELF_DRAFT",
    "TRAINED_DRAFT",
    "TrainedDraftInfo",
    "CatalogEntry",
    "Compatibility",
    "CorruptModel",
    "EmbeddedModelMissing",
    "IncompatibleModels",
    "LoadCancelled",
    "LoadProgress",
    "LoadedModel",
    "ModelError",
    "ModelNotFound",
    "NotAModel",
    "NotCached",
    "OutOfMemory",
    "PickleOnly",
    "ProgressCallback",
    "RemoteCodeRequired",
    "UnsupportedArchitecture",
    "check_compatibility",
    "check_tokenizers",
    "compatible_drafts",
    "default_output_dir",
    "find_trained_draft",
    "is_trained_draft",
    "list_trained_drafts",
    "load_trained_draft",
    "default_device",
    "default_dtype",
    "embedded_gguf",
    "ensure_compatible",
    "list_catalog",
    "load_model",
    "make_drafter",
    "reduced_dtype",
    "self_draft",
]
