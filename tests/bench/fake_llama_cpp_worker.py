"""A stand-in for app/bench/llama_cpp_worker.py that speaks its protocol with known timings, run as a real process.

argv: `--rate R` (target-only tokens/s it reports; its prompt lookup reports 1.5 R), `--missing` (llama_cpp not
importable). Its hello also lists every OpenMP variable it was started with, so a test sees its environment.
"""

import json
import os
import sys

LOOKUP_GAIN = 1.5


def step_seconds(n: int, key: str) -> float:
    """Known verify costs: v(n) = 1 + (n - 1) / 2 with the last row's logits, n with every row's."""
    return 0.01 * (n if key == "all" else 1 + (n - 1) / 2)


def main() -> int:
    args = sys.argv[1:]
    rate = float(args[args.index("--rate") + 1]) if "--rate" in args else 100.0
    env = {k: v for k, v in os.environ.items() if k.startswith(("OMP_", "GOMP_", "KMP_"))}
    if "--missing" in args:
        print(json.dumps({"ready": False, "missing": "llama_cpp", "error": "No module named 'llama_cpp'"}), flush=True)
        return 0
    print(json.dumps({"ready": True, "version": "fake", "system_info": "CPU : FAKE = 1 |",
                      "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "openmp_env": env}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "quit":
            break
        if op == "load":
            reply = {"ok": True, "load_seconds": 0.0}
        elif op == "generate":
            # The prompt read backwards, cut at a stop token or the length limit, stop token kept.
            tokens = []
            for token in reversed(request["ids"]):
                tokens.append(token)
                if token in request["stop"] or len(tokens) >= request["max_new_tokens"]:
                    break
            speed = rate * (LOOKUP_GAIN if request["mode"] == "prompt lookup" else 1.0)
            reply = {"ok": True, "tokens": tokens, "seconds": len(tokens) / speed, "peak_mib": 42.0}
        elif op == "verify":
            reply = {"ok": True, **{key: [step_seconds(n, key) for n in request["ns"]] for key in ("last", "all")}}
        else:
            reply = {"ok": False, "error": f"{op}: unknown"}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
