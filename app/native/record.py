"""What a first load of a GGUF leaves beside its converted copy for a later light load: the fingerprint and
weight count of transformers' model of it (its machine profile's key) and its class (a trained draft's
fingerprint names it). Read back only when every field has its type: a damaged record means a full load."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

RECORD = "speclens-native.json"


@dataclass(frozen=True)
class Record:
    fingerprint: str  # cost_cache.model_fingerprint of the model transformers loaded
    weight_count: int
    architecture: str  # its class, which a trained draft's fingerprint names (feature_format.fingerprint)


def write_record(folder: Path, record: Record) -> None:
    """Kept beside the converted weights (a failure only means the next launch loads transformers' model)."""
    tmp = folder / f".{RECORD}.{os.getpid()}.tmp"  # then renamed: a launch reading it never sees half of it
    try:
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
        tmp.replace(folder / RECORD)
    except OSError:
        tmp.unlink(missing_ok=True)


def read_record(folder: Path) -> Record | None:
    try:
        data = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        record = Record(**data)
    except (OSError, ValueError, TypeError):
        return None
    typed = (isinstance(record.fingerprint, str) and isinstance(record.architecture, str)
             and isinstance(record.weight_count, int) and record.weight_count > 0)
    return record if typed else None
