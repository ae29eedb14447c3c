"""uvicorn serving the routes over an EngineHost in a background thread (`speclens serve`, the window, the
self-test, the tests and the benchmark), on a given or an ephemeral port (0)."""

from __future__ import annotations

import os
import socket
import threading

from . import DEFAULT_HOST, DEFAULT_PORT
from .auth import check_exposure
from .host import EngineHost
from .routes import create_app

SHUTDOWN_GRACE_S = 3  # open streams get this long to finish before they are cut


class LocalServer:
    def __init__(self, host: EngineHost, *, address: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 api_key: str | None = None) -> None:
        check_exposure(address, api_key)  # ValueError before anything listens
        import uvicorn

        self.host = host
        self.address = address
        config = uvicorn.Config(
            create_app(host, api_key=api_key), host=address, port=port, log_level="warning", access_log=False,
            # Named, not "auto": the frozen build bundles these and nothing is looked up by probing.
            http="h11", loop="asyncio", ws="none", lifespan="off", timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self._port = port

    @property
    def port(self) -> int:
        """The bound port (the real one when 0 asked for an ephemeral port), from start() on."""
        return self._port

    @property
    def listening(self) -> bool:
        """Whether this server's thread still runs with a socket open (False once stop() has returned)."""
        alive = self._thread is not None and self._thread.is_alive()
        return alive or any(srv.sockets for srv in (self._server.servers or []))

    @property
    def url(self) -> str:
        address = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{address}:{self.port}"

    def start(self, timeout: float = 30.0) -> LocalServer:
        """In a background thread; returns once it listens. RuntimeError when it could not (port in use).
        The socket is bound here, in the caller's thread: a port in use is this RuntimeError, not a traceback
        that uvicorn's thread prints to the terminal before it exits."""
        sock = _bound(self.address, self._port)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, name="speclens-http",
                                        daemon=True)
        self._thread.start()
        self._thread.join(0.0)
        waited = 0.0
        while not self._server.started and self._thread.is_alive() and waited < timeout:
            self._thread.join(0.02)
            waited += 0.02
        if not self._server.started:
            self.stop()
            sock.close()  # uvicorn closes it only once it has served on it
            raise RuntimeError(f"the server could not listen on {self.address}:{self._server.config.port}")
        self._port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def wait(self) -> None:
        """Until the server stops; Ctrl-C (KeyboardInterrupt) reaches this thread, not uvicorn's."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.5)

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)


def _bound(address: str, port: int) -> socket.socket:
    """A TCP socket bound to address:port (0: any free port), not yet listening (uvicorn listens on it)."""
    sock = None
    try:
        family, kind, proto, _, where = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        if os.name != "nt":  # Windows' SO_REUSEADDR would let two servers share the port
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port left in TIME_WAIT by a restart
        sock.bind(where)
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise RuntimeError(f"the server could not listen on {address}:{port} ({exc.strerror or exc})") from exc
    return sock
