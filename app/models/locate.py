"""Where a spec's model lies: the embedded default, a .gguf file, a saved folder, or a hub id (downloaded or found
in the hub's cache). No model is read here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.errors import ModelNotFound, NotAModel
from app.models.embedded import DEFAULT_SPEC, EMBEDDED_NAME, embedded_gguf
from app.models.hub import looks_like_repo_id, resolve_repo
from app.models.progress import LoadProgress, ProgressCallback

SourceKind = Literal["embedded", "gguf", "folder", "hub"]


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    path: Path  # local: a hub id's snapshot folder once downloaded
    name: str  # for people: messages, the window's title

    @property
    def gguf(self) -> bool:
        """A single GGUF file (the embedded default is one): the native kernel may read its blocks."""
        return self.kind in ("embedded", "gguf")


def locate(spec: str, *, offline: bool | None, allow_pickle: bool, report: ProgressCallback) -> Source:
    """The source of a spec; hub ids are downloaded or found in the cache."""
    if not spec or not spec.strip():
        raise ModelNotFound("no model given: use 'default', a model directory, a .gguf file or a hub id")
    if spec == DEFAULT_SPEC:
        return Source("embedded", embedded_gguf(), EMBEDDED_NAME)
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise NotAModel(f"{path} is a file but not a .gguf model; give a model directory, a .gguf file or a hub id")
        return Source("gguf", path, path.stem)
    if path.is_dir():
        return Source("folder", path, path.name)
    if path.suffix.lower() == ".gguf" or spec.startswith((".", "/", "~")) or not looks_like_repo_id(spec):
        raise ModelNotFound(f"{spec}: no such file or directory")
    report(LoadProgress("download", 0.05, f"looking up {spec} on the Hugging Face hub"))
    return Source("hub", resolve_repo(spec, offline=offline, allow_pickle=allow_pickle, progress=report), spec)
