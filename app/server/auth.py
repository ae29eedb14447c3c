"""Who may reach the server: loopback by default; any other address only with an API key, sent as
`Authorization: Bearer KEY` (compared in constant time)."""

from __future__ import annotations

import hmac
import ipaddress

from .errors import ApiError


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost may resolve to any interface
        return False


def check_exposure(host: str, api_key: str | None) -> None:
    """ValueError when the address is reachable from other machines and no key guards it."""
    if not is_loopback(host) and not api_key:
        raise ValueError(f"--host {host} is reachable from other machines: set --api-key KEY as well "
                         "(clients then send 'Authorization: Bearer KEY')")


def authorize(header: str | None, api_key: str | None) -> None:
    """ApiError 401 unless no key is set or the header carries it."""
    if not api_key:
        return
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), api_key.encode()):
        raise ApiError(401, "missing or wrong API key: send 'Authorization: Bearer KEY' with the server's --api-key",
                       code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})
