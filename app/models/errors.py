"""Model errors carry a message meant for the user, shown without a traceback."""


class ModelError(Exception):
    """Base: str(error) is a complete, user-facing sentence."""


class ModelNotFound(ModelError):
    pass


class EmbeddedModelMissing(ModelNotFound):
    pass


class IncompatibleModels(ModelError):
    pass
