"""The README's library snippet is the public API: run it, with the hub ids pointed at tiny local models."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def library_snippet() -> str:
    text = README.read_text()
    section = text.split("## Library use", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_library_snippet_runs(tiny_pair_dirs, capsys):
    target_dir, draft_dir = tiny_pair_dirs
    code = library_snippet()
    assert "generate(target, ids, ModelDrafter(draft)" in code
    code = code.replace('"HuggingFaceTB/SmolLM2-360M-Instruct"', repr(str(target_dir)))
    code = code.replace('"HuggingFaceTB/SmolLM2-135M-Instruct"', repr(str(draft_dir)))
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    spec, base = scope["spec"], scope["base"]
    assert spec.tokens and base.tokens
    assert {t.status.value for t in spec.tokens} <= {"accepted", "corrected", "bonus"}
    assert {t.status.value for t in base.tokens} == {"target"}
    assert repr((spec.tokens[0].token_id, spec.tokens[0].status.value)) in capsys.readouterr().out
