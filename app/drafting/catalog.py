"""What can be loaded without typing a path: the embedded default, the drafters the registry lists by name
(app.drafting.registry: the self-draft, prompt lookup), causal LMs in the local Hugging Face cache, and .gguf
files or model folders in directories the user added."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.drafting.compat import check_tokenizers
from app.drafting.registry import listed
from app.errors import ModelError
from app.models.checkpoint import is_causal_lm
from app.models.embedded import DEFAULT_SPEC, EMBEDDED_NAME, embedded_gguf
from app.native import conversion_cache

DRAFTER = "drafter"  # a kind of drafter the registry names (a draft only, never a target)


@dataclass(frozen=True)
class CatalogEntry:
    spec: str  # what load_model / make_drafter accept
    name: str
    kind: str  # "embedded", DRAFTER, "hub", "gguf", "folder"
    size_bytes: int = 0
    path: str = ""


def list_catalog(extra_dirs=()) -> list[CatalogEntry]:
    entries = []
    try:
        gguf = embedded_gguf()
        entries.append(CatalogEntry(DEFAULT_SPEC, EMBEDDED_NAME, "embedded", gguf.stat().st_size, str(gguf)))
    except ModelError:
        pass  # not installed: the loader says how to install it when someone asks for it
    entries.extend(CatalogEntry(kind.spec, kind.title, DRAFTER) for kind in listed())
    entries.extend(_hub_cache_entries())
    for root in extra_dirs:
        entries.extend(_directory_entries(Path(root).expanduser()))
    return entries


def compatible_drafts(target: CatalogEntry, catalog: list[CatalogEntry]) -> list[CatalogEntry]:
    """Entries that can draft for target, judged from tokenizer files only (no weights are loaded)."""
    result = [e for e in catalog if e.kind == DRAFTER]
    target_tok = _tokenizer(target.spec)
    if target_tok is None:
        return result
    for entry in catalog:
        if entry.kind == DRAFTER or entry.spec == target.spec:
            continue
        tok = _tokenizer(entry.spec)
        if tok is not None and check_tokenizers(
            target_tok[0], tok[0], target_rows=target_tok[1], draft_rows=tok[1]
        ).compatible:
            result.append(entry)
    return result


def _hub_cache_entries() -> list[CatalogEntry]:
    from huggingface_hub import constants, scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        # Read the cache location now: scan_cache_dir's own default is bound when it is first imported.
        info = scan_cache_dir(constants.HF_HUB_CACHE)
    except (CacheNotFound, OSError):
        return []
    entries = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        snapshot = max(repo.revisions, key=lambda r: r.last_modified, default=None)
        if snapshot is not None and _causal_folder(Path(snapshot.snapshot_path)):
            entries.append(CatalogEntry(repo.repo_id, repo.repo_id, "hub", repo.size_on_disk,
                                        str(snapshot.snapshot_path)))
    return entries


def _directory_entries(root: Path) -> list[CatalogEntry]:
    if not root.is_dir():
        return []
    entries = []
    for path in sorted(root.iterdir()):
        if path.is_file() and path.suffix.lower() == ".gguf":
            entries.append(CatalogEntry(str(path), path.stem, "gguf", path.stat().st_size, str(path)))
        elif path.is_dir() and _causal_folder(path):
            size = sum(p.stat().st_size for p in path.iterdir() if p.is_file())
            entries.append(CatalogEntry(str(path), path.name, "folder", size, str(path)))
    return entries


def _causal_folder(path: Path) -> bool:
    try:
        return is_causal_lm(json.loads((path / "config.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False


def _tokenizer(spec: str):
    """(tokenizer, embedding rows) for a catalog spec, or None when it cannot be read cheaply."""
    from transformers import AutoTokenizer

    try:
        if spec == DEFAULT_SPEC or spec.lower().endswith(".gguf"):
            gguf = embedded_gguf() if spec == DEFAULT_SPEC else Path(spec)
            folder = conversion_cache.lookup(gguf)
            tok = (AutoTokenizer.from_pretrained(folder) if folder
                   else AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name))
            return tok, len(tok)
        path = Path(spec)
        if not path.is_dir():
            from huggingface_hub import snapshot_download

            path = Path(snapshot_download(spec, local_files_only=True))
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        rows = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
        tok = AutoTokenizer.from_pretrained(path)  # never trust_remote_code: this is only a listing
        return tok, int(rows or len(tok))
    except Exception:  # an unreadable entry is simply not offered as a draft
        return None
