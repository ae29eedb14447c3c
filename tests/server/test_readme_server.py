"""The README's "Serve" examples work as written: its curl command and its openai snippet, pointed at a
server on the tiny pair (the model name and port are the only substitutions)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from server_helpers import serving

from app.engine import DecodeParams

README = Path(__file__).resolve().parents[2] / "README.md"
pytestmark = pytest.mark.timeout(120)


def section() -> str:
    text = README.read_text()
    return text.split("## Serve", 1)[1].split("\n## ", 1)[0]


def point(code: str, server, host) -> str:
    assert "http://127.0.0.1:8765" in code and '"default"' in code
    return code.replace("http://127.0.0.1:8765", server.url).replace('"default"', json.dumps(host.pair.model_id))


@pytest.fixture(scope="module")
def readme_server(tiny_loaded):
    target, drafter = tiny_loaded
    with serving(target, drafter, DecodeParams(gamma=3, temperature=0.7, max_new_tokens=64)) as sh:
        yield sh


def test_the_serve_command_line_parses():
    from app.cli import build_parser

    shell = re.search(r"```bash\n(.*?)```", section(), re.S).group(1)
    serve = next(line for line in shell.splitlines() if "speclens serve" in line)
    args = build_parser().parse_args(serve.split("speclens ", 1)[1].split())
    assert args.command == "serve" and args.host == "127.0.0.1" and args.port == 8765


@pytest.mark.skipif(shutil.which("curl") is None, reason="no curl on this machine")
def test_the_curl_example_works(readme_server):
    server, host = readme_server
    shell = re.search(r"```bash\n(.*?)```", section(), re.S).group(1)
    curl = shell[shell.index("curl ") :].strip()
    out = subprocess.run(["bash", "-c", point(curl, server, host)], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    answer = json.loads(out)
    assert answer["object"] == "chat.completion" and answer["usage"]["completion_tokens"] <= 32
    assert answer["choices"][0]["speclens"]["tokens"]


def test_the_openai_snippet_works(readme_server, capsys):
    server, host = readme_server
    code = re.search(r"```python\n(.*?)```", section(), re.S).group(1)
    exec(compile(point(code, server, host), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "alpha" in out and "speedup" in out and ("'accepted'" in out or "'rejected'" in out)
