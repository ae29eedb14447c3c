"""Streamed pieces concatenate to the plain decode of all ids (default model's byte-level BPE)."""

from __future__ import annotations

import pytest
import torch

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


@pytest.mark.slow
def test_an_answer_cut_inside_a_character_streams_its_decode(default_target):
    """The length limit can stop an answer inside a multi-byte character: its last token then carries
    what the detokenizer held back, so the streamed text is the decode of the whole answer (the front
    ends show that text). A random model over the real byte-level vocabulary cuts characters often."""
    from tiny_models import tiny_model

    from app.engine import DecodeParams, FinishedEvent, TokenEvent, decode

    tokenizer = default_target.tokenizer
    model = tiny_model(vocab_size=len(tokenizer), scale=1.0)
    pieces = tokenizer.encode("🚀🔥👨‍👩‍👧", add_special_tokens=False)  # tokens that end inside characters
    head = torch.nn.Linear(model.config.hidden_size, len(tokenizer))  # the model speaks only those pieces
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(-30.0)
        head.bias[pieces] = 0.0
    model.lm_head = head
    cut_inside = 0
    for seed in range(12):
        params = DecodeParams(max_new_tokens=6, temperature=1.0, seed=seed)
        events = list(decode(model, tokenizer.encode("Hi 🚀", return_tensors="pt")[0], params=params,
                             tokenizer=tokenizer))
        text = "".join(e.text for e in events if isinstance(e, TokenEvent) and e.emitted)
        whole = tokenizer.decode(events[-1].token_ids, skip_special_tokens=True)
        assert isinstance(events[-1], FinishedEvent) and text == whole
        cut_inside += whole.endswith("\ufffd")
    assert cut_inside  # the case under test happened (without the flush these answers lose their last bytes)
