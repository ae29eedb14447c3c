"""Streamed pieces concatenate to the plain decode of all ids (default model's byte-level BPE)."""

from __future__ import annotations

import pytest

from app.engine import StreamDetokenizer

TEXTS = (
    "Déjà vu, naïve café – crème brûlée.",
    " leading spaces,  double  spaces\nand a newline",
    "Emoji 🚀🔥 and a family 👨‍👩‍👧 in one answer.",
    "中文测试：你好，世界！日本語もOK。",
    "<|im_start|>assistant\nHello<|im_end|> after specials",
)


@pytest.mark.slow
@pytest.mark.parametrize("text", TEXTS, ids=["accents", "spaces", "emoji", "cjk", "specials"])
def test_pieces_concatenate_to_the_decode(default_target, text):
    tokenizer = default_target.tokenizer
    ids = tokenizer.encode(text, add_special_tokens=False)
    detok = StreamDetokenizer(tokenizer)
    pieces = [detok.push(i) for i in ids]
    assert "".join(pieces) + detok.flush() == tokenizer.decode(ids, skip_special_tokens=True)
    assert all("\ufffd" not in piece for piece in pieces)  # no half characters shown mid-stream


@pytest.mark.slow
def test_incomplete_character_is_held_until_flush(default_target):
    tokenizer = default_target.tokenizer
    ids = tokenizer.encode("🚀", add_special_tokens=False)
    assert len(ids) > 1  # a byte-level BPE splits the emoji's four bytes
    detok = StreamDetokenizer(tokenizer)
    assert [detok.push(i) for i in ids[:-1]] == [""] * (len(ids) - 1)
    assert detok.push(ids[-1]) == "🚀"
