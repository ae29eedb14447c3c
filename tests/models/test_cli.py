"""`speclens generate` on every source, and one-line errors (exit 2, no traceback) for bad input."""

import pytest

from app.cli import main


def run(capsys, *argv, gamma="4"):
    """A fixed γ by default: with a seed, the sampled answer (and where EOS falls) depends on the γ path."""
    code = main(["generate", "--prompt", "hi", "--max-new-tokens", "5", "--seed", "0", "--gamma", gamma, *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("draft", ["draft-dir", "self", "prompt-lookup", "none", "gguf", "org/tiny"])
def test_generate_with_each_draft_source(capsys, tiny_pair_dirs, tiny_gguf, fake_hub, draft):
    spec = {"draft-dir": str(tiny_pair_dirs[1]), "gguf": str(tiny_gguf)}.get(draft, draft)
    code, out, err = run(capsys, "--target", str(tiny_pair_dirs[0]), "--draft", spec)
    if draft == "gguf":  # the tiny GGUF has a byte-level vocabulary: a different family
        assert code == 2 and "cannot draft for target" in err and "Traceback" not in err
    else:
        assert code == 0, err
        assert "5 tokens" in err


@pytest.mark.parametrize("target", ["gguf", "org/tiny"])
def test_generate_targets_from_gguf_and_hub(capsys, tiny_gguf, fake_hub, target):
    """The GGUF runs on the native kernel straight from its file, where a self-draft would be no cheaper than
    the target (refused with its reason), so it is drafted for by prompt lookup; the hub's float folder by a
    bf16 self-draft."""
    if target == "gguf":
        code, _, err = run(capsys, "--target", str(tiny_gguf), "--draft", "self")
        assert code == 2 and "a self-draft would cost a full target step" in err and "Traceback" not in err
        code, _, err = run(capsys, "--target", str(tiny_gguf), "--draft", "prompt-lookup")
        assert code == 0 and "· native" in err, err
    else:
        code, _, err = run(capsys, "--target", target, "--draft", "self")
        assert code == 0, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "/no/such/model"], "no such file or directory"),
        (["--target", "org/absent"], "not in the local Hugging Face cache"),
        (["--draft", "/no/such/draft"], "no such file or directory"),
        (["--device", "gpu7"], "unknown device"),
    ],
)
def test_bad_input_is_one_line(capsys, tiny_pair_dirs, argv, message):
    argv = ["--target", str(tiny_pair_dirs[0]), *argv] if argv[0] != "--target" else argv
    code, _, err = run(capsys, *argv)
    last = err.strip().splitlines()[-1]
    assert code == 2 and message in last and last.startswith("speclens generate: error:")
    assert "Traceback" not in err


def test_auto_draft_and_gamma_are_the_default(capsys, tiny_pair_dirs):
    code = main(["generate", "--prompt", "hi", "--max-new-tokens", "6", "--seed", "0", "--temperature", "0",
                 "--target", str(tiny_pair_dirs[0])])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "choice (measured in" in err  # first time on this machine and pair: timed
    code = main(["generate", "--prompt", "hi", "--max-new-tokens", "6", "--seed", "0", "--temperature", "0",
                 "--target", str(tiny_pair_dirs[0])])
    err = capsys.readouterr().err
    assert code == 0 and "choice (cached measurement)" in err


def test_bad_gamma_is_one_line(capsys, tiny_pair_dirs):
    with pytest.raises(SystemExit) as exc:
        main(["generate", "--prompt", "hi", "--gamma", "lots", "--target", str(tiny_pair_dirs[0])])
    assert exc.value.code == 2
    assert "expected 'auto' or an integer" in capsys.readouterr().err
@pytest.mark.parametrize("draft", ["draft-dir", "prompt-lookup", "none"])
def test_generate_static_gives_the_same_tokens(capsys, tiny_pair_dirs, draft):
    """--static decodes on static caches (--compile adds torch.compile, tested in tests/engine)."""
    import json

    spec = str(tiny_pair_dirs[1]) if draft == "draft-dir" else draft
    argv = ["--target", str(tiny_pair_dirs[0]), "--draft", spec, "--gamma", "4", "--temperature", "0", "--json"]
    code, dynamic, _ = run(capsys, *argv)
    assert code == 0
    code, static, err = run(capsys, *argv, "--static")
    assert code == 0, err
    assert "warming up decoding steps" in err
    assert [t["id"] for t in json.loads(static)["tokens"]] == [t["id"] for t in json.loads(dynamic)["tokens"]]


def test_compile_on_a_cpu_path_it_cannot_compile_is_one_line(capsys, suite_cache):
    """`speclens generate --draft none --compile` where the target runs on the native kernel or the bf16 packed
    path: refused in one line before compiling starts (issue #28: an InductorError traceback)."""
    from app import native
    from app.machine.packed import packing_supported

    cases = []
    if native.active_build() is not None:
        cases.append((["--kernels", "native"], "native kernel"))
    if packing_supported():
        cases.append((["--kernels", "torch", "--dtype", "bfloat16"], "oneDNN-packed"))
    if not cases:
        pytest.skip("neither the native kernel nor oneDNN's bf16 packing runs on this CPU")
    for options, reason in cases:
        code = main(["generate", "--prompt", "hi", "--max-new-tokens", "2", "--draft", "none", "--compile", *options])
        _, err = capsys.readouterr()
        assert code == 2 and reason in err and "Traceback" not in err, (options, err[-400:])
        assert "compiling decoding steps" not in err
