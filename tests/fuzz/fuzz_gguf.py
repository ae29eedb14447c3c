"""Fuzz the GGUF reader: any exception other than CorruptModel, or a hang, is a finding.

    python tests/fuzz/fuzz_gguf.py -max_total_time=600 [corpus folder ...]   (any libFuzzer flag)

Each run seeds the fuzzer with small valid GGUFs written on the spot (F32, F16, Q8_0, Q4_0, Q4_1, nested arrays,
a custom alignment, version 2). `fuzz_one` is the whole check, so a test or a later stage can call it alone:
every input goes through GgufIndex (from bytes), each stage in STAGES, and inspect_gguf (from a file, mapped),
which must refuse it with the same message when the index does.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

try:
    import atheris
except ImportError:  # the seeds and fuzz_one serve tests without it
    atheris = None

if atheris is not None and __name__ == "__main__":  # coverage feedback from SpecLens's own code only
    with atheris.instrument_imports(include=["app"]):
        import app.models.checkpoint
        import app.native.blocks
        import app.native.gguf.index  # noqa: F401

import numpy as np  # noqa: E402
import raw_gguf  # noqa: E402

from app.errors import CorruptModel  # noqa: E402
from app.models.checkpoint import inspect_gguf  # noqa: E402
from app.native.gguf.index import GgufIndex  # noqa: E402

WORK = Path(tempfile.gettempdir()) / "speclens-fuzz-gguf"  # the input as a file, and libFuzzer's findings
WORK.mkdir(exist_ok=True)
SCRATCH = WORK / f"input-{os.getpid()}.gguf"
# libFuzzer's defaults: a hang is reported after 20 minutes; a GGUF header is read in milliseconds
DEFAULT_FLAGS = ["-timeout=10", "-rss_limit_mb=4096", f"-artifact_prefix={WORK}/"]


def _rows(index: GgufIndex) -> None:
    """Every tensor with a known block size maps to exactly its declared rows."""
    for name, info in index.tensors.items():
        rows = index.rows(name)
        if rows is not None:
            assert rows.size == info.nbytes and rows.shape[0] * info.shape[0] == info.elements, name


def _native_blocks(index: GgufIndex) -> None:
    """Every Q4_1 and Q8_0 matrix the reader accepted becomes the kernel's Matrix (which checks its records
    again) and dequantises to its declared shape: the native build's first step on a file."""
    from app.native import active_build, blocks

    build = active_build()
    for name, info in index.tensors.items():
        if build is None or info.kind not in ("Q4_1", "Q8_0") or len(info.shape) != 2:
            continue
        mat = blocks.from_gguf_blocks(info.kind, index.rows(name), info.shape[0])
        mat.native(build)
        assert tuple(mat.dequantize().shape) == (info.shape[1], info.shape[0]), name


STAGES = [_rows, _native_blocks]  # each takes the GgufIndex of an input the reader accepted


def fuzz_one(data: bytes) -> None:
    try:
        index = GgufIndex(data, name=SCRATCH.name)
        refused = None
    except CorruptModel as exc:
        index, refused = None, str(exc)
    if index is not None:
        for stage in STAGES:
            stage(index)
    SCRATCH.write_bytes(data)
    try:
        inspect_gguf(SCRATCH)
    except CorruptModel as exc:
        assert refused is None or str(exc) == refused, (refused, str(exc))
    else:
        assert refused is None, refused


def write_seeds(folder: Path) -> list[Path]:
    """Small valid GGUFs of different types and shapes."""
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import quantize

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = [folder / "raw-v3.gguf", folder / "raw-v2.gguf"]
    paths[0].write_bytes(raw_gguf.valid(raw_gguf.BASE_FIELDS + [raw_gguf.nested("deep", 3)]))
    paths[1].write_bytes(raw_gguf.valid(version=2))
    for name, kinds, alignment in (("q8-q4", ("Q8_0", "Q4_0", "Q4_1"), 32), ("floats", ("F32", "F16"), 64)):
        path = folder / f"{name}.gguf"
        w = GGUFWriter(str(path), "llama")
        w.add_custom_alignment(alignment)
        w.add_uint32("llama.block_count", 1)
        w.add_float32("llama.rope.freq_base", 10000.0)
        w.add_bool("tokenizer.ggml.add_bos_token", True)
        w.add_token_list(["<s>", "a", "bc"])
        w.add_array("nested", [[1, 2], [3]])
        for kind_name in kinds:
            kind = GGMLQuantizationType[kind_name]
            floats = rng.standard_normal((2, 32)).astype(np.float32)
            if kind_name in ("F32", "F16"):
                w.add_tensor(kind_name.lower(), floats.astype(np.float16 if kind_name == "F16" else np.float32))
            else:
                blocks = quantize(floats, kind)
                w.add_tensor(kind_name.lower(), blocks, raw_shape=blocks.shape, raw_dtype=kind)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        paths.append(path)
    return paths


def main(argv: list[str]) -> None:
    flags = [a for a in argv[1:] if a.startswith("-")]
    folders = [a for a in argv[1:] if not a.startswith("-")]
    if not folders:
        folders = [tempfile.mkdtemp(prefix="corpus-", dir=WORK)]
    write_seeds(Path(folders[0]))  # libFuzzer reads them first, and writes new inputs beside them
    given = {f.split("=")[0] for f in flags}
    flags += [f for f in DEFAULT_FLAGS if f.split("=")[0] not in given]
    atheris.Setup([argv[0], *flags, *folders], fuzz_one)
    atheris.Fuzz()


if __name__ == "__main__":
    if atheris is None:
        sys.exit("atheris is not installed: pip install atheris (it is in the dev extras)")
    main(sys.argv)
