"""Model loading, the embedded default, draft construction, pre-flight and catalog. No Qt here."""

from .catalog import CatalogEntry, compatible_drafts, list_catalog
from .compat import Compatibility, check_compatibility, check_tokenizers, ensure_compatible
from .devices import default_device, default_dtype, reduced_dtype
from .drafts import NO_DRAFT, PROMPT_LOOKUP, SELF_DRAFT, TRAINED_DRAFT, make_drafter, self_draft
from .embedded import DEFAULT_SPEC, embedded_gguf
from .errors import (
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
from .loading import LoadedModel, load_model
from .progress import LoadProgress, ProgressCallback
from .trained_drafts import (
    TrainedDraftInfo,
    default_output_dir,
    find_trained_draft,
    is_trained_draft,
    list_trained_drafts,
    load_trained_draft,
)

__all__ = [
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
