"""A disk that refuses the cache's weights (full, over a quota) never fails a load: the cache only saves time.
Seen in CI: with the disk full, safetensors raised its own error type, which loading took for a damaged model
("has corrupt weights (... No space left on device)") and the embedded model would not load at all.

A child process stands for the full disk: it ignores SIGXFSZ and may write no file over 256 KiB, so the small
files (config, tokenizer, records) are written and every weight file is refused by the kernel (EFBIG), as
ENOSPC refuses it on a full disk. In it: the first native launch, the next (light) one, the torch route's
float copy and a draft's Q4_0 copy, each refused, each load still made, and a note that says what was not kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.native import active_build

pytestmark = pytest.mark.skipif(active_build() is None or sys.platform == "win32",
                                reason="the native kernel is not built here, or no file-size limit to set")

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, resource, signal, sys
from pathlib import Path

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))

from app.engine import DecodeParams, generate
from app.models import load_model
from app.native import draft_blocks

gguf, said = sys.argv[1], []
for kernels in ("native", "native", "torch"):
    loaded = load_model(gguf, device="cpu", kernels=kernels)
    ids = loaded.encode_chat([{"role": "user", "content": "abc"}])
    tokens = generate(loaded.model, ids, None, DecodeParams(max_new_tokens=4, temperature=0.0),
                      vocab_size=loaded.vocab_size).token_ids
    said.append(dict(kernels=loaded.kernels, cache=loaded.extra.get("converted_cache"),
                     notes=loaded.extra.get("notes", []), tokens=len(tokens)))
draft = draft_blocks.as_draft(load_model(gguf, device="cpu", draft=True).model)
said.append(dict(draft=draft.cache_backend.weights.kinds))
print(json.dumps(said))
"""


def test_a_disk_that_refuses_the_weights_leaves_every_load_working(tmp_path):
    from kquant_gguf import write_kquant_gguf

    gguf = write_kquant_gguf(tmp_path / "model.gguf", {"default": "Q5_0", "attn_v": "Q6_K"}, layers=2, seed=3)
    env = dict(os.environ, SPECLENS_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(gguf)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, light, torch_route, draft = json.loads(proc.stdout.strip().splitlines()[-1])
    for load in (first, light):
        assert "native" in load["kernels"] and load["tokens"] > 0, load
        assert any("could not keep" in note and "the next launch lays them out again" in note
                   for note in load["notes"]), load["notes"]
    assert light["cache"] == "hit"  # the small files were kept: the light route, laying the weights out again
    assert torch_route["cache"] == "failed" and torch_route["tokens"] > 0
    assert draft["draft"] == "Q4_0"
    weights = [p.name for p in (tmp_path / "cache").rglob("*.safetensors")]
    assert weights == [], weights  # nothing half-written left behind
