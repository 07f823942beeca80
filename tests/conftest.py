from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

WORD = re.compile(r"\w+")


class HashingEmbedder:
    """Deterministic hashed bag-of-words unit vectors: exact, fast, and never what knowledge runs by default."""

    model_id = "hashing-test"
    dims = 64
    max_tokens = 64
    fingerprint = "hashing-test-1"

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dims, dtype=np.float32)
        for word in WORD.findall(text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dims] += 1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_documents(self, texts, on_batch=None):
        out = np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dims), np.float32)
        if on_batch:
            on_batch(len(texts))
        return out.astype(np.float32)

    def embed_query(self, text):
        return self._vector(text)

    def count_tokens(self, text):
        return len(WORD.findall(text))


def model_home() -> Path:
    """Where tests build and find real models: `KNOWLEDGE_TEST_MODEL_HOME`, set for the session below."""
    return Path(os.environ["KNOWLEDGE_TEST_MODEL_HOME"])


@pytest.fixture(scope="session", autouse=True)
def session_model_home(tmp_path_factory):
    """Models the tests need are built in a temporary home, never into the user's cache; the models the user has
    already built (the README's install builds the default one) are linked in read-only, not built again. Set
    KNOWLEDGE_TEST_MODEL_HOME to keep the builds between runs."""
    if os.environ.get("KNOWLEDGE_TEST_MODEL_HOME"):
        yield
        return
    from knowledge.fs import user_cache_dir

    home = tmp_path_factory.mktemp("model-home")
    (home / "models").mkdir()
    built = user_cache_dir() / "models"
    for folder in sorted(built.iterdir()) if built.is_dir() else ():
        if folder.is_dir() and not folder.name.startswith(".") and (folder / "model.onnx").is_file():
            (home / "models" / folder.name).symlink_to(folder, target_is_directory=True)
    os.environ["KNOWLEDGE_TEST_MODEL_HOME"] = str(home)
    yield
    del os.environ["KNOWLEDGE_TEST_MODEL_HOME"]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("knowledge-home")
    monkeypatch.setenv("KNOWLEDGE_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("user-config")))  # trusted stores live there
    for name in (
        "KNOWLEDGE_MODEL",
        "KNOWLEDGE_MODEL_VARIANT",
        "KNOWLEDGE_REDACT_SECRETS",
        "KNOWLEDGE_THRESHOLD",
        "KNOWLEDGE_FULL_THRESHOLD",
        "KNOWLEDGE_BUDGET",
        "SEARCH_SIMILARITY_THRESHOLD",
        "SEARCH_FULL_CONTEXT_SIMILARITY_THRESHOLD",
        "SEARCH_CONTEXT_TOKEN_LIMIT",
        "KNOWLEDGE_K",
        "KNOWLEDGE_STORE",
        "KNOWLEDGE_STORE_REPOSITORY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


@pytest.fixture
def hashing_embedder():
    return HashingEmbedder()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def commit(root: Path, files: dict[str, str | bytes], message: str = "change") -> None:
    write(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture(scope="session")
def postgres_server():
    """One real PostgreSQL (pgvector) for the session; skipped, with the reason, where it cannot start."""
    from .pgserver import PostgresUnavailable, start_postgres

    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server, request):
    """A fresh database of that server for one test."""
    import psycopg

    name = "t_" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:16]
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_server.url(name)


def index_bytes(root):
    """Every byte under `.knowledge/`, and every compressed value in its databases unpacked (a chunk's fields and
    text, a waiting embedding input are kept zlib-compressed)."""
    import contextlib
    import sqlite3
    import zlib

    from knowledge.store.local_files import PACKED_ROW, row_fields

    folder = root / ".knowledge"
    found = [p.read_bytes() for p in folder.rglob("*") if p.is_file()]
    for database in folder.glob("*.sqlite"):
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        with contextlib.suppress(zlib.error):
                            found.append(zlib.decompress(value))
                        if value[:1] == PACKED_ROW:
                            found.append(row_fields("", value)[1].encode())
        db.close()
    return b"".join(found)


def make_wheel(folder, name, version, init="", pth=""):
    """A minimal pure-Python wheel `name-version` whose package runs `init` when imported, with a `.pth` line when
    given (what runs at the interpreter's next start)."""
    import base64
    import zipfile

    files = {
        f"{name}/__init__.py": init,
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if pth:
        files[f"{name}.pth"] = pth
    record = f"{name}-{version}.dist-info/RECORD"
    lines = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(text.encode())}")
    files[record] = "\n".join([*lines, f"{record},,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
