"""Draft models the user already has that fit a target, as LM Studio lists compatible drafts: .gguf files and model
folders beside the target's own file, causal LMs in the Hugging Face cache, and the real pair's download folder.
Auto (the model kind's AutoRule in app.drafting.registry) times them beside its other candidates, so a draft model
is weighed per round with lookup like any draft (app.drafting.auto: lookup where it proposes, else the draft).

A candidate must share the target's token ids (compat.check_tokenizers, from tokenizer files only: no weights load)
and be clearly smaller on disk: a draft as large as its target costs about a target step a token. The verdicts
are kept for the process by the files' size and time, so a second load does not read the tokenizers again.
No Qt here.
"""

from __future__ import annotations

from pathlib import Path

from app.drafting.catalog import _causal_folder, _hub_cache_entries, _tokenizer
from app.drafting.compat import check_tokenizers
from app.drafting.registry import TRAINED_CONFIG
from app.models.embedded import DEFAULT_SPEC
from app.models.rows import output_rows
from app.paths import user_cache_dir

REAL_PAIR_FOLDER = "real-pair"  # under the user cache: where app.bench.real_pair fetches the real pair (default_dir)
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


_VERDICTS: dict[tuple[str, int, str, int, int], bool] = {}  # (target, its rows, draft, size, mtime) -> compatible


def _compatible(target, path: Path) -> bool:
    """Whether the model at path shares the target's token ids (tokenizer files only), kept per file state."""
    try:
        stat = path.stat()
    except OSError:
        return False
    rows = output_rows(target.model)
    key = (target.spec, rows, str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _VERDICTS:
        tok = _tokenizer(str(path))
        _VERDICTS[key] = tok is not None and check_tokenizers(
            target.tokenizer, tok[0], target_rows=rows, draft_rows=tok[1]).compatible
    return _VERDICTS[key]
