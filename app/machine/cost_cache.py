"""The cache of what was timed on this machine, in one JSON file: one machine profile per model.

Entries live in `<user cache>/drafter-costs.json` under a key that hashes everything the timing depends
on (machine_profile.profile_key: machine, core count, torch, the model's fingerprint, device, dtype, ...);
any change gives a new key, so a stale entry is never read, only aged out. A damaged or older file means
measuring again. No Qt here.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from pathlib import Path

from app.machine.packed import weight_count
from app.paths import user_cache_dir

CACHE_NAME = "drafter-costs.json"
# 2: minimum timings; 3: head charged at every verified position; 4: a longer probe context;
# 5: the CPU linear path (bf16 packed) is chosen at load and cached here too; 6: token trees (E[accepted] per node budget);
# 7: bf16 attention in fixed blocks (v(n) fell by half: older verify costs would keep auto from drafting) and a timed tree pass;
# 8: one machine profile per model (kernels, threads, v(n), drafters), each part with the load it was timed under;
# 9: a bf16 path is kept only where a twin of the whole model passes the row probe (row_probe.py);
# 10: auto offers the native C model beside torch's paths (a forced native choice has a key of its own);
# 11: a feature draft beside a native target runs on the native kernel (its c fell about threefold), and a
# drafter has a per-round cost c_round beside c; 12: α probed on a code request beside the chat, 32 tokens each
# (a coder pair's α was read from 16 tokens of prose); 13: v(n) of a pass over a proposal carries the round's own
# work (VerifyCosts.round), and lookup's per-round matching is timed in the engine's rounds (VerifyTiming.match).
CACHE_FORMAT = 13
CACHE_ENTRIES = 32  # oldest entries beyond this are dropped


def machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text:
            return text
    return platform.node()


def cpu_count() -> int:
    return os.cpu_count() or 1


def key_of(parts: list) -> str:
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def cache_file() -> Path:
    return user_cache_dir() / CACHE_NAME


def read(key: str) -> dict | None:
    """The entry stored under key, or None (absent, damaged or written by another format)."""
    try:
        data = json.loads(cache_file().read_text(encoding="utf-8"))
        if data.get("format") != CACHE_FORMAT:
            return None
        entry = data["entries"][key]
        return entry if isinstance(entry, dict) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def entries() -> dict[str, dict]:
    """Every entry of the cache, newest first ({} when absent, damaged or of another format)."""
    try:
        data = json.loads(cache_file().read_text(encoding="utf-8"))
        found = data["entries"] if data.get("format") == CACHE_FORMAT else {}
        items = [(k, e) for k, e in found.items() if isinstance(e, dict)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    return dict(sorted(items, key=lambda kv: str(kv[1].get("measured_at", "")), reverse=True))


def write(key: str, entry: dict) -> None:
    """Store entry under key (stamped with the time), keeping the newest CACHE_ENTRIES; never raises."""
    path = cache_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["entries"] if data.get("format") == CACHE_FORMAT and isinstance(data.get("entries"), dict) else {}
    except (OSError, ValueError, AttributeError, KeyError):
        entries = {}
    entries[key] = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), **entry}
    entries = dict(sorted(entries.items(), key=lambda kv: kv[1].get("measured_at", ""))[-CACHE_ENTRIES:])
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, "entries": entries}, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache folder only means measuring again next time


def model_fingerprint(model) -> str:
    """What keys a model's profile (app.native.record.fingerprint: config, weight count, embedding rows), so a
    GGUF's first load and its converted copy share the first run's timings. A light native model carries the
    fingerprint of the transformers model it was first loaded as."""
    from app.native.model import is_native
    from app.native.record import fingerprint

    if is_native(model):
        return model.fingerprint
    return fingerprint(model, weight_count(model))


def spec_fingerprint(spec: str) -> str:
    """A draft spec with its files' names, sizes and times: a retrained draft in the same folder is another drafter."""
    path = Path(spec).expanduser()
    if path.exists():
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
        return spec + ":" + ",".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)
    return spec
