"""Dense safetensors copies of dequantised GGUF files, so a second launch skips the ~15 s conversion.

Entries live in user_cache_dir()/converted/<stem>-<fingerprint>/ as ordinary save_pretrained
folders (config, weights, tokenizer). The fingerprint is the file size plus a sha256 of the whole
file, so any edit gives a new entry, even one that keeps the size and leaves both ends alone.
Hashing gigabytes takes seconds, so each file's hash is remembered in converted/fingerprints.json
under what stat says of it (size, mtime, inode, device): an unchanged file is read once, and a
touch, edit or re-download is hashed again.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from app.paths import user_cache_dir

CHUNK = 4 * 2**20
# A dequantised 7B model is ~28 GB in float32; caching that silently would surprise anyone.
MAX_CACHED_BYTES = 4 * 2**30
COMPLETE_MARKER = "speclens-complete"
MEMO = "fingerprints.json"
MEMO_FILES = 64  # the memo remembers this many files, the most recently hashed
# A file written this recently may be written again within its mtime's granularity (FAT's is 2 s; Linux
# stamps at kernel ticks): its hash is not remembered, or a quick second edit would keep the first one's stat.
RECENT_NS = 2 * 10**9


def fingerprint(path: Path) -> str:
    stat = path.stat()
    seen = [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_dev]
    name = str(path.resolve())
    memo = _read_memo()
    entry = memo.get(name)
    if isinstance(entry, dict) and entry.get("stat") == seen and isinstance(entry.get("fingerprint"), str):
        return entry["fingerprint"]
    value = f"{stat.st_size:x}-{_content_hash(path)}"
    if abs(time.time_ns() - stat.st_mtime_ns) > RECENT_NS:  # a future mtime (clock skew) is no write of now
        memo.pop(name, None)  # re-inserted last: the memo drops the files hashed longest ago
        memo[name] = {"stat": seen, "fingerprint": value}
        _write_memo(dict(list(memo.items())[-MEMO_FILES:]))
    return value


def _content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _read_memo() -> dict:
    """The memo, or an empty one when it is missing, unreadable or not ours: it only saves time."""
    try:
        memo = json.loads((user_cache_dir() / "converted" / MEMO).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # ValueError: bad UTF-8 or JSON; RecursionError: [[[[...
        return {}
    return memo if isinstance(memo, dict) else {}


def _write_memo(memo: dict) -> None:
    """Atomic (temp file + rename), so a crash or a second SpecLens never leaves half a memo; failures ignored."""
    try:
        folder = user_cache_dir() / "converted"
        folder.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=folder, prefix=".memo-", suffix=".json")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            json.dump(memo, f)
        os.replace(temp, folder / MEMO)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)


def entry_dir(gguf: Path) -> Path:
    return user_cache_dir() / "converted" / f"{gguf.stem}-{fingerprint(gguf)}"


def tokenizer_dir(key: str) -> Path:
    """The converted tokenizer of every GGUF whose tokenizer fields hash to `key` (GgufIndex.tokenizer_key)."""
    import transformers

    return user_cache_dir() / "tokenizers" / f"{key}-transformers-{transformers.__version__}"


def lookup(gguf: Path) -> Path | None:
    """The converted folder for this exact file, if a complete one exists."""
    folder = entry_dir(gguf)
    return folder if (folder / COMPLETE_MARKER).is_file() else None


def store(gguf: Path, model, tokenizer) -> Path | None:
    """Write the dequantised model; atomic (temp dir + rename) so a crash never leaves half an entry.

    Returns None (and caches nothing) when the dense weights would exceed MAX_CACHED_BYTES or the
    disk refuses: the cache only saves time, it must never make a load fail.
    """
    from safetensors import SafetensorError
    from safetensors.torch import save_model  # imports torch: only when a conversion is stored

    dense_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if dense_bytes > MAX_CACHED_BYTES:
        return None
    final = entry_dir(gguf)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
    try:
        # The GGUF quantizer marks the model unserialisable; its weights are plain dense tensors by now.
        config = copy.deepcopy(model.config)
        config.__dict__.pop("quantization_config", None)
        config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        save_model(model, str(tmp / "model.safetensors"))  # drops tied duplicates (lm_head = embed_tokens)
        tokenizer.save_pretrained(tmp)
        (tmp / COMPLETE_MARKER).write_text(gguf.name, encoding="utf-8")
        if final.exists():  # a native load's folder (record, laid-out weights): the float copy joins it, file by file
            for item in tmp.iterdir():
                os.replace(item, final / item.name)
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except (OSError, SafetensorError):  # safetensors' own type for a disk that refuses (full, over a quota)
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return final


def discard(folder: Path) -> None:
    """Remove a converted folder that does not describe its file (edited, damaged or stale), so the next load
    converts the file anew; a folder that cannot be removed is renamed aside, never read again under its key."""
    try:
        shutil.rmtree(folder)
    except OSError:
        try:
            os.replace(folder, folder.with_name(f".discarded-{folder.name}-{os.getpid()}"))
        except OSError:
            (folder / COMPLETE_MARKER).unlink(missing_ok=True)
