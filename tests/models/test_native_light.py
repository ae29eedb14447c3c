"""A launch whose cached profile chose the native path loads the light native model (native/light.py): no
transformers model classes, no float32 matrices; the first launch, which reads the GGUF's blocks and times the
kernel, keeps its kernel weights for that light model. Both must be one model: the same kernel weights (so the same
logits, bit for bit), the same float rows, fingerprints and rotary as transformers' (so the same profile and
the same trained draft), and greedy speculation through them equal to target-only greedy. Planted twins: a
record of another model, a safetensors copy whose q rows kept llama.cpp's order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from app.engine import DecodeParams, generate
from app.native import active_build

# One worker: `loads` (a first launch, ~5 s) is made once for the module, not once in each worker.
pytestmark = [pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here"),
              pytest.mark.slow, pytest.mark.xdist_group("native-light")]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def isolated_cache():
    """The module's cache (first_launch_cache), not one per test (tests/models/conftest.py)."""


@pytest.fixture(scope="module", autouse=True)
def first_launch_cache(tmp_path_factory):
    """One cache for the module, empty at its start (the fresh process of the import test reads it too): `loads`
    is a first launch, and a light load is what that launch's conversion, profile and record give the next."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPECLENS_CACHE_DIR", str(tmp_path_factory.mktemp("first-launch-cache")))
        yield


@pytest.fixture(scope="module")
def loads(first_launch_cache):
    """(a first launch, the next one): the first reads the GGUF's blocks, times the kernel and writes the record
    and the profile (the file's activation digits are known: quality.MEASURED, so no float32 reference; the
    route with one is the tiny GGUFs' in tests/models/test_gguf_direct.py), and the next load of
    the same file reads no transformers model."""
    from app.models import load_model

    full = load_model("default", device="cpu", kernels="native")
    light = load_model("default", device="cpu", kernels="native")
    return full, light


def test_the_second_load_is_light_and_the_first_ends_light(loads):
    from app.native.light import NativeCausalLM
    from app.native.model import KernelRows

    full, light = loads
    assert full.extra.get("light") is None and light.extra["light"]  # the first read the file and measured
    assert isinstance(full.model, NativeCausalLM) and isinstance(light.model, NativeCausalLM)
    assert light.kernels == full.kernels and light.threads.threads == full.threads.threads
    assert light.profile.key == full.profile.key  # found by the record's fingerprint
    for loaded in (full, light):  # no float matrices held: rows are made when something reads them
        assert sum(p.numel() for p in loaded.model.parameters()) == 0
        assert isinstance(loaded.model.get_input_embeddings(), KernelRows)


def test_the_kernel_weights_and_logits_are_the_same_bit_for_bit(loads):
    full, light = loads
    a, b = full.model.cache_backend, light.model.cache_backend
    assert a.weights.kinds == b.weights.kinds and a.weights.nbytes == b.weights.nbytes
    ids = full.encode_chat([{"role": "user", "content": "Name three primary colours."}])
    assert a.weights.dims == b.weights.dims
    ca, cb = a.new_cache(), b.new_cache()
    assert torch.equal(a.forward(ca, ids, keep=len(ids)), b.forward(cb, ids, keep=len(ids)))
    more = torch.tensor([28, 1092, 30, 2])
    assert torch.equal(a.forward(ca, more, keep=4), b.forward(cb, more, keep=4))


def test_what_the_app_reads_of_the_model_is_the_same(loads):
    from app.engine.feature_format import fingerprint
    from app.machine.cost_cache import model_fingerprint
    from app.machine.packed import weight_count

    full, light = loads
    f, g = full.model, light.model
    g.get_input_embeddings()._weight = None  # as loaded: no float rows held (another test may have read them)
    assert fingerprint(f) == fingerprint(g)  # the trained draft's compatibility
    assert g.get_input_embeddings()._weight is None  # hashed a block of rows at a time, none kept
    assert torch.equal(f.get_input_embeddings().weight, g.get_input_embeddings().weight)
    assert g.get_output_embeddings().weight is g.get_input_embeddings().weight  # tied, one copy
    assert model_fingerprint(f) == model_fingerprint(g) and weight_count(f) == weight_count(g)
    assert (light.vocab_size, light.stop_token_ids) == (full.vocab_size, full.stop_token_ids)
    assert light.dtype == full.dtype and light.device == full.device
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    family = LlamaRotaryEmbedding(LlamaConfig(**full.model.config.to_dict()))  # what a feature draft read before
    positions = torch.arange(40).view(1, -1)
    x = torch.zeros(1, 40, 576)
    for want, got in zip(family(x, positions), g.base_model.rotary_emb(x, positions), strict=True):
        assert torch.equal(want, got)


def _greedy(target, drafter):
    prompt = target.encode_chat([{"role": "user", "content": "Copy this list twice: apples, pears, plums, figs."}])
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=40, seed=0)
    return generate(target.model, prompt, drafter, params, vocab_size=target.vocab_size,
                    stop_token_ids=target.stop_token_ids).token_ids


def test_greedy_speculation_on_the_light_model_equals_its_target_only(loads):
    from app.drafting.drafts import make_drafter

    full, light = loads
    expected = _greedy(full, None)
    assert _greedy(light, None) == expected
    for spec in ("trained", "prompt-lookup"):
        assert _greedy(light, make_drafter(spec, light)) == expected, spec
    trained_full = make_drafter("trained", full)
    assert _greedy(full, trained_full) == expected


def test_a_record_of_another_model_loads_transformers_model(loads, monkeypatch):
    """Planted: the record's fingerprint names no cached profile, so the load cannot be light."""
    from app.models import load_model
    from app.models.embedded import embedded_gguf
    from app.native import conversion_cache, record

    folder = conversion_cache.lookup(embedded_gguf())
    real = record.read_record(folder)
    monkeypatch.setattr(record, "read_record", lambda _folder: record.Record("0" * 24, real.weight_count,
                                                                             real.architecture))
    assert load_model("default", device="cpu", kernels="native").extra.get("light") is None


def test_a_light_launch_imports_no_model_classes(loads):
    """In a fresh process, as a second launch: the load, a feature draft and an answer, without
    transformers.modeling_utils (the ~2 s the light path exists to save), nor the torch.distributed.tensor and
    sympy that a family's config class imports (~1 s)."""
    code = (
        "import sys\n"
        "from app.models import load_model\n"
        "from app.drafting.drafts import make_drafter\n"
        "from app.engine import DecodeParams, generate\n"
        "t = load_model('default', device='cpu', kernels='native')\n"
        "d = make_drafter('trained', t)\n"
        "ids = t.encode_chat([{'role': 'user', 'content': 'hi'}])\n"
        "generate(t.model, ids, d, DecodeParams(gamma=2, temperature=0, max_new_tokens=8), vocab_size=t.vocab_size)\n"
        "heavy = ('transformers.modeling_utils', 'torch.distributed.tensor', 'sympy')\n"
        "print(type(t.model).__name__, [m for m in heavy if m in sys.modules])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # the same thread setting as this process: the same profile key
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["NativeCausalLM", "[]"], out.stdout


def test_the_kernel_weights_are_stored_and_read_back_bit_for_bit(loads, tmp_path):
    """The first load keeps its kernel weights beside the converted copy; a light load reads them instead of
    re-laying the GGUF's blocks. Planted: a damaged file is not read (the light load builds them again)."""
    from app.models.embedded import embedded_gguf
    from app.native import conversion_cache, stored
    from app.native.blocks import QMatrix

    full, _ = loads
    folder = conversion_cache.lookup(embedded_gguf())
    from app.native.build import expected_shapes

    shapes = expected_shapes(full.model.config, tied=True)
    parts, built = stored.load(folder, shapes), full.model.cache_backend.weights.parts
    assert parts is not None and parts.keys() == built.keys()
    for name, part in built.items():
        if isinstance(part, QMatrix):
            assert (parts[name].kind, parts[name].rows, parts[name].n, parts[name].k) == (part.kind, part.rows, part.n, part.k)
            assert torch.equal(parts[name].data, part.data), name
        else:
            assert torch.equal(parts[name], part), name
    stored.save(tmp_path, built)
    data = stored.path_in(tmp_path).read_bytes()
    stored.path_in(tmp_path).write_bytes(data[: len(data) // 2])
    assert stored.load(tmp_path, shapes) is None
