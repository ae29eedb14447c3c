"""The kernel's record layouts, the one table Python reads (csrc/blocks.h's structs say the same in C).

A record holds one panel of 16 output channels and one unit of inputs (32; 256 for the K types) of one block
type: its fields in order, each a number of bytes, so every offset follows from the sizes as a struct's does.
blocks.py, q5.py and kquants.py pack and read records through `field` and `RECORD_BYTES`; descriptor.layout_mismatch
checks this table against every build's layout()["blocks"] at import, so a build whose structs differ is
refused with a reason instead of reading records it does not lay out the same way.
"""

from __future__ import annotations

PANEL, BLOCK, SUPER = 16, 32, 256
Q4_1, Q8_0, Q4_K, Q5_K, Q6_K = 1, 2, 12, 13, 14
Q4_0, Q5_0, Q5_1 = 4, 6, 7  # GGML's ids, but Q4_0's (2 is this kernel's Q8_0)
F16 = 2 * PANEL  # a float16 for each channel

# name: (type id, unit of inputs, [(field, bytes)] in record order)
_FIELDS = {
    "Q4_1": (Q4_1, BLOCK, [("nibbles", 4 * PANEL * 4), ("d", F16), ("m", F16)]),
    "Q8_0": (Q8_0, BLOCK, [("codes", 8 * PANEL * 4), ("d", F16)]),
    # GGML's small blocks, 16 of them a record in exactly their file bytes (q5.py packs them)
    "Q4_0": (Q4_0, BLOCK, [("nibbles", 4 * PANEL * 4), ("d", F16)]),
    "Q5_0": (Q5_0, BLOCK, [("nibbles", 4 * PANEL * 4), ("bit4", 8 * 8), ("d", F16)]),
    "Q5_1": (Q5_1, BLOCK, [("nibbles", 4 * PANEL * 4), ("bit4", 8 * 8), ("d", F16), ("m", F16)]),
    "Q4_K": (Q4_K, SUPER, [("nibbles", 8 * 256), ("scale", 8 * PANEL), ("min", 8 * PANEL), ("d", F16), ("dmin", F16)]),
    "Q5_K": (Q5_K, SUPER, [("nibbles", 8 * 256), ("bit4", 8 * 8 * 8), ("scale", 8 * PANEL), ("min", 8 * PANEL),
                           ("d", F16), ("dmin", F16)]),
    "Q6_K": (Q6_K, SUPER, [("nibbles", 8 * 256), ("bits", 8 * 2 * 8 * 8), ("scale", 16 * PANEL), ("d", F16)]),
}


def _layout(kind: int, unit: int, fields: list[tuple[str, int]]) -> dict:
    at, placed = 0, {}
    for name, size in fields:
        placed[name] = (at, size)
        at += size
    return {"type": kind, "unit": unit, "bytes": at, "fields": placed}


# {name: {"type", "unit", "bytes", "fields": {field: (offset, bytes)}}}: what layout()["blocks"] returns
LAYOUTS = {name: _layout(*spec) for name, spec in _FIELDS.items()}
NAMES = {spec["type"]: name for name, spec in LAYOUTS.items()}
RECORD_BYTES = {spec["type"]: spec["bytes"] for spec in LAYOUTS.values()}
UNIT = {spec["type"]: spec["unit"] for spec in LAYOUTS.values()}


def field(kind: int, name: str) -> slice:
    """The bytes of field `name` in a record of type `kind` (for data[..., field(kind, name)])."""
    at, size = LAYOUTS[NAMES[kind]]["fields"][name]
    return slice(at, at + size)


def mismatch(build) -> str | None:
    """None when a build's layout()["blocks"] is this table, else which type differs."""
    theirs = build.layout().get("blocks")
    if not isinstance(theirs, dict) or set(theirs) != set(LAYOUTS):
        return "the native build's block types differ from this SpecLens's (reinstall: pip install -e .)"
    for name, ours in LAYOUTS.items():
        got = theirs[name]
        fields = {k: tuple(v) for k, v in dict(got.get("fields", {})).items()}
        if (got.get("type"), got.get("unit"), got.get("bytes"), fields) != (ours["type"], ours["unit"], ours["bytes"],
                                                                            ours["fields"]):
            return f"the native build lays out {name} records unlike this SpecLens (reinstall: pip install -e .)"
    return None
