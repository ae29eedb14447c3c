"""Dense safetensors copies of dequantised GGUF files, so a second launch skips the ~15 s conversion.

Entries live in user_cache_dir()/converted/<stem>-<fingerprint>/ as ordinary save_pretrained
folders (config, weights, tokenizer). The fingerprint is the file size plus a sha256 of its first
and last MiB: cheap on multi-GiB files, and any re-download or edit of a GGUF changes it.
"""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from app.paths import user_cache_dir

CHUNK = 2**20
# A dequantised 7B model is ~28 GB in float32; caching that silently would surprise anyone.
MAX_CACHED_BYTES = 4 * 2**30
COMPLETE_MARKER = "speclens-complete"


def fingerprint(path: Path) -> str:
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as f:
        digest.update(f.read(CHUNK))
        if size > CHUNK:
            f.seek(max(CHUNK, size - CHUNK))
            digest.update(f.read(CHUNK))
    return f"{size:x}-{digest.hexdigest()[:16]}"


def entry_dir(gguf: Path) -> Path:
    return user_cache_dir() / "converted" / f"{gguf.stem}-{fingerprint(gguf)}"


def lookup(gguf: Path) -> Path | None:
    """The converted folder for this exact file, if a complete one exists."""
    folder = entry_dir(gguf)
    return folder if (folder / COMPLETE_MARKER).is_file() else None


def store(gguf: Path, model, tokenizer) -> Path | None:
    """Write the dequantised model; atomic (temp dir + rename) so a crash never leaves half an entry.

    Returns None (and caches nothing) when the dense weights would exceed MAX_CACHED_BYTES or the
    disk refuses: the cache only saves time, it must never make a load fail.
    """
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
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return final
