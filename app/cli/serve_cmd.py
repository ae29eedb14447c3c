"""`speclens serve`: the model pair behind an OpenAI-compatible HTTP API (app/server), until Ctrl-C."""

from __future__ import annotations

import argparse
import sys

from app.server import DEFAULT_HOST, DEFAULT_PORT, MAX_WAITING

from .common import add_engine_args, add_model_args, add_sampling_args, params_from, static_decoder


def add_parser(sub) -> None:
    p = sub.add_parser("serve", help="serve the model pair over an OpenAI-compatible HTTP API")
    p.add_argument("--host", default=DEFAULT_HOST,
                   help="address to listen on (default: loopback only); any other needs --api-key")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    p.add_argument("--api-key", default=None, metavar="KEY",
                   help="require 'Authorization: Bearer KEY' on every request")
    p.add_argument("--history", choices=("on", "off"), default="off",
                   help="save every answer into the history the window shows (default: off)")
    p.add_argument("--queue", type=int, default=MAX_WAITING, metavar="N",
                   help=f"requests that may wait to start (at least 1; default {MAX_WAITING}); more get 429 with "
                        "Retry-After")
    add_model_args(p)
    add_sampling_args(p)
    add_engine_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from app.server.auth import check_exposure

    check_exposure(args.host, args.api_key)  # refuse before minutes of loading
    if args.queue < 1:
        raise ValueError(f"--queue must be >= 1, got {args.queue}")
    params = params_from(args)
    log = sys.stderr
    from app.session import ChatModel

    from .generate_cmd import load_pair

    target, drafter, auto = load_pair(args, log)
    model = ChatModel(args.target, args.draft)  # the pair held as the window holds its own
    model.install(target, drafter, args.draft, auto=auto)
    model.set_static(static_decoder(args, target.model, drafter, model.gamma_max(None if auto else params.gamma), log))
    from app.server.host import EngineHost, ServedPair
    from app.server.server import LocalServer

    host = EngineHost(ServedPair.of(model, params), max_waiting=args.queue)
    if args.history == "on":
        from app.server.history_sink import HistorySink

        host.subscribe(HistorySink(host))
    host.start()
    server = LocalServer(host, address=args.host, port=args.port, api_key=args.api_key)
    try:
        server.start()
    except RuntimeError as exc:
        host.close()
        raise ValueError(str(exc)) from None
    gamma = "auto" if model.auto is not None else params.gamma
    print(f"serving {target.name} (draft: {host.pair.draft_name}, gamma {gamma}) at {server.url}/v1 "
          f"as model {host.pair.model_id!r}; history {args.history}; Ctrl-C stops", file=log, flush=True)
    try:
        server.wait()
    except KeyboardInterrupt:
        print("stopping", file=log, flush=True)
    finally:
        server.stop()
        host.close()
    return 0
