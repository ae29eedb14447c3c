"""What a first load of a GGUF leaves beside its converted copy for a later light load: the fingerprint and
weight count of transformers' model of it (its machine profile's key) and its class (a trained draft's
fingerprint names it). Read back only when every field has its type: a damaged record means a full load."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

RECORD = "speclens-native.json"


@dataclass(frozen=True)
class Record:
    fingerprint: str  # fingerprint() of the model transformers loaded
    weight_count: int
    architecture: str  # its class, which a trained draft's fingerprint names (feature_format.fingerprint)


def fingerprint(model: Any, weight_count: int) -> str:
    """Config, weight count and a sample of the embedding rows of transformers' model: changes when the weights
    change, not with where they were read from (a GGUF's first load and its converted copy must share the first
    run's timings). The one formula for a machine profile's key (app.machine.cost_cache.model_fingerprint)."""
    config = json.loads(model.config.to_json_string(use_diff=False))
    for where in ("_name_or_path", "quantization_config"):
        config.pop(where, None)
    h = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    h.update(str(weight_count).encode())
    rows = model.get_input_embeddings().weight
    h.update(rows[:: max(1, rows.shape[0] // 64), :64].detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:24]


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
