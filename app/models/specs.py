"""Draft specs that name no model; torch-free, so the catalog can list them before torch loads."""

PROMPT_LOOKUP = "prompt-lookup"
SELF_DRAFT = "self"
NO_DRAFT = "none"
TRAINED_DRAFT = "trained"  # the best trained feature draft found for the target
AUTO = "auto"  # the drafter and γ measured fastest on this machine, or none
TRAINED_CONFIG = "feature_draft.json"  # the file a trained feature draft's folder is known by


def spec_title(spec: str) -> str:
    """A drafter spec as a person reads it: a folder or file by its name, a trained feature draft's folder as
    "feature draft (<folder>)"; a spec that names no path ("self", "prompt-lookup") as it is."""
    from pathlib import Path

    if "/" not in spec and "\\" not in spec:
        return spec
    path = Path(spec).expanduser()
    if (path / TRAINED_CONFIG).is_file():
        return f"feature draft ({path.name})"
    return path.name or spec
