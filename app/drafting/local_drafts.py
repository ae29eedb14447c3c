"""Draft models the user already has that fit a target, as LM Studio lists compatible drafts: .gguf files and model
folders beside the target's own file, causal LMs in the Hugging Face cache, and the real pair's download folder.
Auto (the model kind's AutoRule in app.drafting.registry) times them beside its other candidates, so a draft model
is weighed per round with lookup like any draft (app.drafting.auto: lookup where it proposes, else the draft).

A candidate must share the target's token ids (compat.check_tokenizers, from tokenizer files only: no weights load)
and be clearly smaller on disk: a draft as large as its target costs about a target step a token. The verdicts
are kept by both files' size and time in the user cache (VERDICTS_FILE), so a later load does not read the
tokenizers again.
No Qt here.
"""

from __future__ import annotations

import json
from pathlib import Path

from app.drafting.catalog import _causal_folder, _hub_cache_entries, _tokenizer
from app.drafting.compat import check_tokenizers
from app.drafting.registry import TRAINED_CONFIG
from app.models.embedded import DEFAULT_SPEC
from app.models.rows import output_rows
from app.paths import user_cache_dir

REAL_PAIR_FOLDER = "real-pair"  # under the user cache: where app.models.real_pair fetches the real pair (default_dir)
MAX_SHARE = 0.6  # a draft's weights on disk at most this share of the target's (the real pair's 0.5B: 0.44)
MAX_CANDIDATES = 2  # each candidate costs a load and a probe at auto's first load on a machine
WEIGHTS = (".gguf", ".safetensors", ".bin")


def local_draft_candidates(target) -> list[str]:
    """The specs of compatible draft models the user has for a loaded target (app.models.LoadedModel), best
    placed first: beside the target's file, then the real pair's download, then the hub cache; in each the
    smallest first. The embedded model is weighed by its own rule (drafts.embedded_candidates)."""
    own = _local_path(target.spec)
    size = _weights_bytes(own) if own is not None else 0
    if own is None or not size:
        return []
    found: list[str] = []
    places = [_beside(own), _models_in(user_cache_dir() / REAL_PAIR_FOLDER), _hub_models()]
    for place in places:
        for path in sorted(place, key=_weights_bytes):
            spec = str(path)
            if spec in found or _same(path, own) or not 0 < _weights_bytes(path) <= MAX_SHARE * size:
                continue
            if _compatible(target, path):
                found.append(spec)
            if len(found) == MAX_CANDIDATES:
                return found
    return found


def _local_path(spec: str) -> Path | None:
    """The target's own file or folder: a local path, or a hub id's cached snapshot; None for the embedded model."""
    if spec == DEFAULT_SPEC:
        return None
    path = Path(spec).expanduser()
    if path.exists():
        return path.resolve()
    return next((Path(e.path) for e in _hub_cache_entries() if e.spec == spec), None)


def _beside(own: Path) -> list[Path]:
    """Models in the target's own folder: for a .gguf file, its siblings; for a model folder, the folders beside it."""
    return _models_in(own.parent)


def _models_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir()
            if (p.is_file() and p.suffix.lower() == ".gguf")
            or (p.is_dir() and not (p / TRAINED_CONFIG).is_file() and _causal_folder(p))]


def _hub_models() -> list[Path]:
    return [Path(e.path) for e in _hub_cache_entries() if e.path]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _weights_bytes(path: Path) -> int:
    """Bytes of a model's weights on disk: a .gguf file, or a folder's weight files."""
    try:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file() and p.suffix.lower() in WEIGHTS)
    except OSError:
        return 0


VERDICTS_FILE = "local-drafts.json"  # in the user cache: reading a GGUF's tokenizer took 20 s on a busy 2-core CPU
_VERDICTS: dict[str, bool] = {}  # this process's, by _key; the file's are read into it once


def _compatible(target, path: Path) -> bool:
    """Whether the model at path shares the target's token ids (tokenizer files only), kept by both files' state in
    this process and in the user cache, so a later load does not read the tokenizers again."""
    key = _key(target, path)
    if key is None:
        return False
    if not _VERDICTS:
        _VERDICTS.update(_read())
    if key not in _VERDICTS:
        tok = _tokenizer(str(path))
        _VERDICTS[key] = tok is not None and check_tokenizers(
            target.tokenizer, tok[0], target_rows=output_rows(target.model), draft_rows=tok[1]).compatible
        _write()
    return _VERDICTS[key]


def _key(target, path: Path) -> str | None:
    own = _local_path(target.spec)
    theirs = _stamp(path)
    if theirs is None:
        return None
    mine = (_stamp(own) if own is not None else None) or target.spec
    return f"{mine}|{output_rows(target.model)}|{theirs}"


def _stamp(path: Path) -> str | None:
    """A file's or a folder's files' sizes and latest change: a model replaced in place is judged again."""
    try:
        stats = [path.stat()] if path.is_file() else [p.stat() for p in path.iterdir() if p.is_file()]
    except OSError:
        return None
    return f"{path}:{sum(s.st_size for s in stats)}:{max((s.st_mtime_ns for s in stats), default=0)}"


def _file() -> Path:
    return user_cache_dir() / VERDICTS_FILE


def _read() -> dict[str, bool]:
    try:
        data = json.loads(_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, bool)} if isinstance(data, dict) else {}


def _write() -> None:
    try:
        tmp = _file().with_suffix(".tmp")
        tmp.write_text(json.dumps(_VERDICTS, indent=0, sort_keys=True), encoding="utf-8")
        tmp.replace(_file())
    except OSError:  # a read-only cache: the verdicts are kept for this process only
        pass
