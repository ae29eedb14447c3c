"""A GGUF loaded as a draft (plan.LoadRequest.draft, set by drafts.model_draft) takes the fastest activation
digits with no float32 reference and no quality pass: its precision changes only how often its tokens are
accepted, never the output. Its profile is its own, so the same file loaded as a target is still quality-gated
(the gate's own tests: test_native_digits.py, test_native_gate.py). Greedy speculation with such a draft is
target-only greedy, token for token."""

from __future__ import annotations

import pytest
from kquant_gguf import write_kquant_gguf

from app.native import active_build, quality

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")
_REAL_CHOOSE = quality.choose_digits  # the no_reference fixture refuses it: a target's own measure calls it here


@pytest.fixture
def no_reference(monkeypatch):
    """Planted: building transformers' float32 reference or running the quality pass fails the load."""
    from app.models import route_direct
    from app.native import quality

    def refuse(*args, **kwargs):
        raise AssertionError("a draft's load built a float32 reference or ran the quality pass")

    monkeypatch.setattr(route_direct, "load_gguf", refuse)
    monkeypatch.setattr(quality, "choose_digits", refuse)


def test_a_draft_takes_the_fastest_digits_without_a_reference(no_reference, monkeypatch, tmp_path):
    from app.models import load_model
    from app.models.route_direct import DRAFT_DIGITS
    from app.native.descriptor import FASTEST_DIGITS

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    gguf = write_kquant_gguf(tmp_path / "draft.gguf", {"default": "Q4_K", "attn_v": "Q6_K", "ffn_down": "Q6_K"})
    first = load_model(str(gguf), device="cpu", draft=True)
    assert first.model.cache_backend.weights.digits == FASTEST_DIGITS and "1 digit" in first.kernels
    assert first.profile.kernels.path.digits == FASTEST_DIGITS.code and DRAFT_DIGITS in first.profile.kernels.reason
    later = load_model(str(gguf), device="cpu", draft=True)  # light, from the draft's own profile
    assert later.extra.get("light") and later.model.cache_backend.weights.digits == FASTEST_DIGITS


def test_the_same_file_as_a_target_is_still_quality_gated(monkeypatch, tmp_path):
    """Planted twin: the draft's cached choice is never a target's; the target's load measures its quality."""
    from app.models import load_model, route_direct
    from app.native import quality
    from app.native.descriptor import TWO_DIGITS

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    gguf = write_kquant_gguf(tmp_path / "model.gguf", "Q4_K")
    draft = load_model(str(gguf), device="cpu", draft=True)
    gated: list[int] = []
    real_reference = route_direct.load_gguf

    def reference(*args, **kwargs):
        gated.append(1)
        return real_reference(*args, **kwargs)

    def choose(*args, **kwargs):  # the gate's measure is its own tests'; here: that it runs, and its choice holds
        gated.append(2)
        return quality.Fidelity(100, 1.0, (1.0, 1.0), 0.0, (0.0, 0.0), TWO_DIGITS), {}

    monkeypatch.setattr(route_direct, "load_gguf", reference)
    monkeypatch.setattr(quality, "choose_digits", choose)
    target = load_model(str(gguf), device="cpu")
    assert gated == [1, 2] and target.extra.get("light") is None
    assert target.model.cache_backend.weights.digits == TWO_DIGITS and "quality:" in target.profile.kernels.reason
    assert target.profile.key != draft.profile.key


def _against_two_only(*args, reference=None, **kwargs):
    """A target above REFERENCE_WEIGHTS: its digits chosen against its own two-digit pass, no float32 copy."""
    assert reference is not None, "a target above REFERENCE_WEIGHTS was measured against a float32 copy"
    return _REAL_CHOOSE(*args, reference=reference, **kwargs)


def test_greedy_speculation_with_a_fastest_digits_draft_is_target_only(no_reference, monkeypatch, tmp_path):
    from app.drafting.drafts import make_drafter
    from app.engine import DecodeParams, generate
    from app.models import load_model, route_direct
    from app.native.descriptor import FASTEST_DIGITS

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    target_file = write_kquant_gguf(tmp_path / "target.gguf", "Q6_K", layers=3, seed=1)
    draft_file = write_kquant_gguf(tmp_path / "draft.gguf", "Q4_K", layers=1, seed=1)
    from app.native import quality

    monkeypatch.setattr(route_direct, "REFERENCE_WEIGHTS", 0)  # the target: no float32 copy either
    monkeypatch.setattr(quality, "choose_digits", _against_two_only)
    target = load_model(str(target_file), device="cpu")
    assert quality.TWO_DIGITS_REFERENCE in target.profile.kernels.reason
    drafter = make_drafter(str(draft_file), target)
    assert drafter.model.cache_backend.weights.digits == FASTEST_DIGITS
    assert drafter.model.cache_backend.weights.kinds == "Q4_0"  # its Q4_K blocks re-blocked (draft_blocks)
    ids = target.encode_chat([{"role": "user", "content": "abcabc abcabc"}])
    for gamma in (1, 4):
        params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=32, seed=0)
        expected = generate(target.model, ids, None, params, vocab_size=target.vocab_size).token_ids
        assert generate(target.model, ids, drafter, params, vocab_size=target.vocab_size).token_ids == expected



def test_a_drafts_native_path_of_float_weights_takes_the_fastest_digits_unmeasured(no_reference):
    """The TORCH route's native model of a folder's float weights: a draft's is not quality-measured either."""
    from tiny_models import char_tokenizer, tiny_model

    from app.machine import torch_path
    from app.models import route_torch
    from app.models.plan import DRAFT_DIGITS
    from app.native.descriptor import FASTEST_DIGITS

    timed = torch_path.PathChoice(torch_path.NATIVE, {}, False, "native: fastest here")
    choice, native = route_torch.native_path(tiny_model(), char_tokenizer(), timed, None, forced=False,
                                             report=lambda _: None, draft=True)
    assert choice.path.native and choice.path.digits == FASTEST_DIGITS.code and DRAFT_DIGITS in choice.reason
    assert native.cache_backend.weights.digits == FASTEST_DIGITS


def test_a_draft_sharing_its_targets_tokenizer_fields_converts_no_tokenizer(monkeypatch, tmp_path):
    """The target's first load converts the GGUF's tokenizer; a draft whose tokenizer fields are the same bytes
    reads that conversion (GgufIndex.tokenizer_key). Planted twin: another architecture (another converter) has
    another key."""
    import transformers

    from app.models import load_model
    from app.native.gguf.index import GgufIndex

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    target_file = write_kquant_gguf(tmp_path / "target.gguf", "Q6_K", layers=3, seed=1)
    draft_file = write_kquant_gguf(tmp_path / "draft.gguf", "Q4_K", layers=1, seed=2)
    other = write_kquant_gguf(tmp_path / "other.gguf", "Q4_K", arch="qwen2", layers=1, seed=2)
    key = GgufIndex(target_file).tokenizer_key()
    assert GgufIndex(draft_file).tokenizer_key() == key != GgufIndex(other).tokenizer_key()
    target = load_model(str(target_file), device="cpu", draft=True)
    convert = transformers.AutoTokenizer.from_pretrained

    def kept_only(*args, **kwargs):
        assert "gguf_file" not in kwargs, "the draft's tokenizer was converted again"
        return convert(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", kept_only)
    draft = load_model(str(draft_file), device="cpu", draft=True)
    assert draft.tokenizer.get_vocab() == target.tokenizer.get_vocab()
    assert load_model(str(draft_file), device="cpu", draft=True).extra.get("light")  # its own folder kept it too
    from app.native import conversion_cache, direct

    shared = conversion_cache.tokenizer_dir(key)  # the key leaves the chat template out: the file's own is set
    own = direct.tokenizer_of(draft_file, tmp_path / "fresh", None, shared, "{{ messages }}")
    assert own.chat_template == "{{ messages }}" and own.get_vocab() == target.tokenizer.get_vocab()
