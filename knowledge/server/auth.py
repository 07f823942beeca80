"""Pure security predicates for the HTTP server: bearer tokens, token files, Host and Origin checks."""

from __future__ import annotations

import hmac
import ipaddress
import stat
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ConfigError

TOKEN_ENV = "KNOWLEDGE_TOKEN"
MIN_TOKEN_LENGTH = 16


def load_token(environ: Mapping[str, str], token_file: Path | None) -> str | None:
    """The server token from KNOWLEDGE_TOKEN or a file only its owner can read (never from a flag: `ps` shows those)."""
    if token_file is not None:
        try:
            info = token_file.stat()
        except OSError as exc:
            raise ConfigError(f"{token_file}: cannot read token file ({exc.strerror})") from exc
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"{token_file}: token file must not be readable by others (chmod 600 it)")
        token = token_file.read_text(encoding="utf-8").strip()
    else:
        token = environ.get(TOKEN_ENV, "").strip()
    if not token:
        return None
    if len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(
            f"{TOKEN_ENV if token_file is None else token_file}: token shorter than {MIN_TOKEN_LENGTH} characters"
        )
    return token


def bearer_ok(header: str | None, token: str) -> bool:
    """Constant-time comparison of an `Authorization: Bearer …` header with the server token."""
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), token.encode())


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.index("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def host_allowed(host_header: str | None, bind_host: str, allowed: frozenset[str] = frozenset()) -> bool:
    """Against DNS rebinding: the Host must be loopback, an IP literal (when not bound to loopback), or allowed.

    A rebinding attack reaches the server under an attacker's DNS name, so any other name is refused.
    """
    if not host_header:
        return False
    name = _host_name(host_header)
    if name in allowed or is_loopback(name):
        return True
    return not is_loopback(bind_host) and _is_ip(name)


def origin_allowed(origin: str | None, allowed: frozenset[str] = frozenset()) -> bool:
    """Browsers send Origin; only loopback pages (or listed origins) may call the API. No Origin: not a browser."""
    if origin is None:
        return True
    if origin in allowed:
        return True
    host = urlsplit(origin).hostname or ""
    return is_loopback(host)
