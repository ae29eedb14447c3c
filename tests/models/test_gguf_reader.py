"""The GGUF reader (gguf_index.py) refuses every malformed file with one CorruptModel line naming the file and
its fault, through GgufIndex (bytes and path) and inspect_gguf alike; a valid file reads as gguf.GGUFReader
reads it. The native kernel trusts every offset this reader hands it, so each fault here is a memory bug the
reader stops."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from raw_gguf import (
    ARRAY,
    BASE_FIELDS,
    BASE_TENSORS,
    F32,
    Q8_0,
    U8,
    field,
    nested,
    string,
    tensor,
    u32,
    valid,
)
from tiny_gguf import write_tiny_gguf

from app.errors import CorruptModel
from app.models.checkpoint import inspect_gguf
from app.native.gguf.index import GGML_TYPE_SIZES, MAX_NESTING, GgufIndex

ARCH, ALIGN, TOKENS = BASE_FIELDS
A, B = BASE_TENSORS


def _refusals(data: bytes, tmp_path) -> list[str]:
    """The messages of all three readers, each of which must refuse the file."""
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    messages = []
    for read in (lambda: GgufIndex(data, name="bad.gguf"), lambda: GgufIndex(path), lambda: inspect_gguf(path)):
        with pytest.raises(CorruptModel) as caught:
            read()
        messages.append(str(caught.value))
    return messages


def _patched(data: bytes, at: int, raw: bytes) -> bytes:
    return data[:at] + raw + data[at + len(raw):]


MALFORMED = {
    "bad magic": (valid(magic=b"GGML"), "magic"),
    "version 1": (valid(version=1), "version 1 is not supported"),
    "version 99": (valid(version=99), "version 99 is not supported"),
    "big-endian": (_patched(valid(), 4, struct.pack(">I", 3)), "big-endian"),
    "empty file": (b"", "truncated"),
    "shorter than the header": (b"GGUF\x03\0\0\0", "is truncated: the header runs past the end"),
    "huge tensor count": (valid(tensor_count=2**60), f"claims {2**60} tensors"),
    "huge field count": (valid(field_count=2**40), f"claims {2**40} metadata fields"),
    "huge key length": (valid([string("general.architecture", 2**62)]), "a string of 4611686018427387904 bytes"),
    "huge string value": (valid([field("general.name", 8, string("x", 2**63))]), "'general.name' (a string of"),
    "zero alignment": (valid([ARCH, u32("general.alignment", 0)]), "general.alignment is 0"),
    "alignment 3": (valid([ARCH, u32("general.alignment", 3)]), "general.alignment is 3"),
    "alignment 1 GiB": (valid([ARCH, u32("general.alignment", 2**30)]), "power of two up to"),
    "alignment not uint32": (valid([ARCH, field("general.alignment", U8, b"\x20")]), "must be uint32"),
    "arrays 20 deep": (valid([ARCH, nested("deep", 20)]), f"nests arrays more than {MAX_NESTING} deep"),
    "unknown value type": (valid([ARCH, field("odd", 13, b"\0" * 8)]), "'odd' has unknown value type 13"),
    "array of unknown type": (valid([ARCH, field("odd", ARRAY, struct.pack("<IQ", 77, 1))]),
                              "array of unknown value type 77"),
    "huge array": (valid([ARCH, field("many", ARRAY, struct.pack("<IQ", U8, 2**50))]), "an array of 1125899906842624"),
    "string array cut": (valid([ARCH, field("toks", ARRAY, struct.pack("<IQ", 8, 2) + string("a", 2**40))]),
                         "a string in 'toks'"),
    "offset past the end": (valid(tensors=[A, tensor("b", (32, 2), Q8_0, 4096)]), "tensor 'b' needs bytes"),
    "misaligned offset": (valid(tensors=[A, tensor("b", (32, 2), Q8_0, 16)]), "not a multiple of the alignment 32"),
    "no dims": (valid(tensors=[tensor("a", (), F32, 0)]), "'a' has 0 dimensions"),
    "5 dims": (valid(tensors=[tensor("a", (1, 1, 1, 1, 4), F32, 0)]), "'a' has 5 dimensions"),
    "zero dim": (valid(tensors=[tensor("a", (4, 0), F32, 0)]), "zero dimension"),
    "overflowing dims": (valid(tensors=[tensor("a", (2**32, 2**32, 2**32), F32, 0)]), "elements"),
    "dim of 2**64-1": (valid(tensors=[tensor("a", (2**64 - 1,), F32, 0)]), "elements"),
    "duplicate tensor": (valid(tensors=[A, tensor("a", (4,), F32, 0)]), "tensor 'a' appears twice"),
    "duplicate key": (valid([ARCH, ARCH]), "'general.architecture' appears twice"),
    "invalid UTF-8 tensor name": (valid(tensors=[tensor(b"\xff\xfe", (4,), F32, 0)]), "tensor 0 is not valid UTF-8"),
    "invalid UTF-8 key": (valid([ARCH, field(b"k\xc3", U8, b"\0")]), "key 1 is not valid UTF-8"),
    "row not whole blocks": (valid(tensors=[A, tensor("b", (33, 2), Q8_0, 32)]), "not whole Q8_0 blocks of 32"),
    "newline in a name": (valid(tensors=[tensor("x\ny", (4,), F32, 0)] * 2), "'x\\ny' appears twice"),
    "data cut short": (valid()[:-1], "truncated: tensor 'b' needs bytes"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_file_is_one_line_naming_its_fault(case, tmp_path):
    data, fragment = MALFORMED[case]
    messages = _refusals(data, tmp_path)
    assert len(set(messages)) == 1, messages  # fuzzer's finding: a short file was worded apart by path and bytes
    assert messages[0].startswith("bad.gguf") and "\n" not in messages[0] and fragment in messages[0], messages[0]


@pytest.mark.parametrize("share", [0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 0.99])
def test_a_truncated_file_is_refused_wherever_it_is_cut(share, tmp_path):
    """Cut inside the header, the vocabulary's strings, the tensor infos and the data (tiny_gguf's real file)."""
    data = write_tiny_gguf(tmp_path / "tiny.gguf").read_bytes()
    for message in _refusals(data[: int(len(data) * share)], tmp_path):
        assert "is truncated" in message and "\n" not in message, message


def test_the_base_file_and_arrays_at_the_nesting_limit_read(tmp_path):
    """The twin of the malformed cases: each is one fault away from a file that reads."""
    index = GgufIndex(valid([ARCH, ALIGN, TOKENS, nested("deep", MAX_NESTING)]))
    assert index.values == {"general.architecture": "llama", "general.alignment": 32}
    assert index.array_lengths == {"tokens": 2, "deep": 1}
    assert index.rows("b").shape == (2, 34) and index.rows("b").tobytes() == bytes(range(68))
    path = tmp_path / "base.gguf"
    path.write_bytes(valid())
    assert inspect_gguf(path).architecture == "llama" and inspect_gguf(path).parameters == 4 + 64


def test_inspect_gguf_names_what_transformers_would_miss(tmp_path):
    """No architecture, or a tensor type gguf does not know: the index reads both, inspect_gguf refuses."""
    for data, fragment in ((valid([ALIGN]), "general.architecture"),
                           (valid(tensors=[A, tensor("b", (32, 2), 99, 32)]), "'b' has unknown ggml type 99")):
        assert GgufIndex(data).tensors["a"].shape == (4,)
        path = tmp_path / "odd.gguf"
        path.write_bytes(data)
        with pytest.raises(CorruptModel, match=fragment):
            inspect_gguf(path)
    assert GgufIndex(data).rows("b") is None


def test_a_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(CorruptModel, match="gone.gguf could not be read"):
        inspect_gguf(tmp_path / "gone.gguf")


def test_the_type_table_is_ggufs():
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    assert {t.value: (t.name, *GGML_QUANT_SIZES[t]) for t in GGMLQuantizationType} == GGML_TYPE_SIZES


def _quantized_gguf(path):
    from gguf import GGMLQuantizationType, GGUFWriter
    from gguf.quants import quantize

    rng = np.random.default_rng(0)
    w = GGUFWriter(str(path), "llama")
    w.add_custom_alignment(64)
    w.add_array("nested", [[1, 2], [3]])
    for kind in (GGMLQuantizationType.Q8_0, GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q4_1):
        blocks = quantize(rng.standard_normal((3, 64)).astype(np.float32), kind)
        w.add_tensor(kind.name, blocks, raw_shape=blocks.shape, raw_dtype=kind)
    w.add_tensor("f16", rng.standard_normal((2, 5, 8)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("make", [write_tiny_gguf, _quantized_gguf])
def test_a_valid_file_reads_as_ggufs_reader_reads_it(make, tmp_path):
    from gguf import GGUFReader, GGUFValueType

    path = make(tmp_path / "valid.gguf")
    index, reader = GgufIndex(path), GGUFReader(str(path))
    assert list(index.tensors) == [t.name for t in reader.tensors]
    for t in reader.tensors:
        info = index.tensors[t.name]
        assert (info.kind, list(info.shape), info.offset) == (t.tensor_type.name, list(t.shape), t.data_offset)
        assert (info.elements, info.nbytes) == (t.n_elements, t.n_bytes)
        assert index.rows(t.name).tobytes() == np.asarray(t.data).tobytes()
    arrays = {k: len(f.contents()) for k, f in reader.fields.items() if f.types[0] == GGUFValueType.ARRAY}
    if "nested" in arrays:
        arrays["nested"] = 2  # [[1, 2], [3]]: the reader's contents() flattens arrays of arrays
    scalars = {k: f.contents() for k, f in reader.fields.items() if f.types[0] != GGUFValueType.ARRAY}
    scalars = {k: v for k, v in scalars.items() if not k.startswith("GGUF.")}  # the reader's own header fields
    assert index.array_lengths == arrays and index.values == pytest.approx(scalars)
    assert inspect_gguf(path).parameters == sum(int(t.n_elements) for t in reader.tensors)
