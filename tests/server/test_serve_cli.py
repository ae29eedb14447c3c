"""`speclens serve` as a user runs it: a process that loads the pair as `generate` does, serves on a free port,
and stops on Ctrl-C; and on the embedded model, greedy answers equal `speclens generate` token for token."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from server_helpers import client, serving

from app.cli import main
from app.engine import DecodeParams

ROOT = Path(__file__).resolve().parents[2]
READY_S = 120  # process start, torch import, loading and the baseline step
SIGINT_AT_DEFAULT = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                     "sys.argv[0] = 'speclens'; runpy.run_module('app', run_name='__main__')")


@pytest.mark.timeout(240)
def test_serve_command_serves_and_stops_on_ctrl_c(tiny_pair_dirs, tmp_path):
    target, draft = tiny_pair_dirs
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECLENS_DATA_DIR=str(tmp_path), OMP_NUM_THREADS="1")
    proc = subprocess.Popen(
        # As from a terminal, Ctrl-C raises KeyboardInterrupt whatever this test process inherited or a library set
        # (a child keeps an ignored SIGINT ignored; within the full suite the server once let Ctrl-C go unanswered)
        [sys.executable, "-c", SIGINT_AT_DEFAULT, "serve", "--target", str(target), "--draft", str(draft), "--device", "cpu",
         "--port", "0", "--gamma", "3", "--temperature", "0", "--max-new-tokens", "12", "--history", "on"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT,
    )
    inherited = signal.getsignal(signal.SIGINT)
    try:
        url, deadline, lines = None, time.monotonic() + READY_S, []
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stderr.readline()
            lines.append(line)
            found = re.search(r" at (http://127\.0\.0\.1:\d+)/v1 ", line)
            url = found.group(1) if found else None
        assert url, "".join(lines)
        # Keep reading its log: a pipe nobody drains fills, and a process writing to a full pipe never exits.
        drain = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
        drain.start()
        import openai

        c = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)
        model = c.models.list().data[0].id
        r = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
        assert r.usage.completion_tokens <= 12 and r.usage.model_extra["speclens"]["drafter"] == "draft"
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            code = None
        assert code == 0, f"exit {code} 30 s after Ctrl-C (SIGINT here: {inherited}); its log:\n" + "".join(lines[-40:])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    from app.history import HistoryStore

    (conv,) = HistoryStore(tmp_path / "history.sqlite3").list_conversations()
    assert conv.message_count == 2


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_greedy_on_the_embedded_model_equals_speclens_generate(default_target, capsys):
    from app.drafting.drafts import make_drafter

    args = ["--target", "default", "--device", "cpu", "--draft", "prompt-lookup", "--gamma", "4",
            "--temperature", "0", "--max-new-tokens", "24"]
    prompt = "Name three primary colours."
    assert main(["generate", "--prompt", prompt, *args, "--json"]) == 0
    reference = json.loads(capsys.readouterr().out)
    drafter = make_drafter("prompt-lookup", default_target)
    with serving(default_target, drafter, DecodeParams(gamma=4, temperature=0.0, max_new_tokens=24)) as (server, _):
        r = client(server).chat.completions.create(model="default", messages=[{"role": "user", "content": prompt}])
    tokens = [t for t in r.choices[0].model_extra["speclens"]["tokens"] if t["status"] != "rejected"]
    assert [(t["id"], t["status"]) for t in tokens] == [(t["id"], t["status"]) for t in reference["tokens"]]
    assert r.choices[0].message.content == reference["text"]
