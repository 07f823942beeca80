"""Fault injection: kill -9 at random moments, commit storms with hooks, a hostile-file fuzz corpus, server attacks.

    python bench/faults.py --kills 200 --storms 5 --fuzz 5000 --out bench/results/faults.json

Everything runs the real `knowledge` command (MiniLM, so that a trial takes seconds) on temp git repositories built
from SciFact abstracts and this package's own source. A trial passes only if the index opens after the fault and the
next ordinary run ends equal to a clean rebuild of the same tree: the same chunks (id and content hash), every chunk
embedded, and the same vectors. `tests/` runs a small fast subset of the same properties on every commit.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beir_data import SHARED, load
from freshness import markdown

from knowledge.corpus import candidate_paths
from knowledge.store.local import LocalStore

KNOWLEDGE = [sys.executable, "-m", "knowledge"]
PACKAGE = Path(__file__).resolve().parent.parent / "knowledge"
MODEL = "all-MiniLM-L6-v2"


def env(home: Path, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "KNOWLEDGE_"))}
    return {
        **out,
        "KNOWLEDGE_HOME": str(home),
        "KNOWLEDGE_MODEL": os.environ.get("FAULTS_MODEL", MODEL),
        "KNOWLEDGE_NO_DAEMON": "1",
        "GIT_AUTHOR_NAME": "Faults",
        "GIT_AUTHOR_EMAIL": "faults@example.com",
        "GIT_COMMITTER_NAME": "Faults",
        "GIT_COMMITTER_EMAIL": "faults@example.com",
        "PYTHONPATH": str(PACKAGE.parent),
        **extra,
    }


def git(root: Path, *args: str, hooks_off: bool = True) -> str:
    prefix = ["-c", "core.hooksPath=/nonexistent"] if hooks_off else []
    return subprocess.run(["git", *prefix, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def knowledge(root: Path, home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KNOWLEDGE, "-C", str(root), *args], env=env(home), capture_output=True, text=True, timeout=timeout
    )


def make_corpus(root: Path, docs: int, code: int, seed: int = 0) -> None:
    data = load(SHARED / "scifact", "test")
    rng = random.Random(seed)
    picked = rng.sample(sorted(data.corpus), docs)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for n, key in enumerate(picked):
        title, text = data.corpus[key]
        (root / "docs").mkdir(exist_ok=True)
        (root / "docs" / f"doc{n:03d}.md").write_text(markdown(title, text), encoding="utf-8")
    sources = sorted(PACKAGE.rglob("*.py"))[:code]
    for path in sources:
        target = root / "src" / path.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "corpus")


def state(root: Path) -> dict[str, object]:
    """Everything that must equal a clean rebuild: chunks by id, coverage, vectors by chunk id."""
    out: dict[str, object] = {}
    for kind in ("docs", "code"):
        store = LocalStore.open(root, kind)
        try:
            chunks = store.all_chunks()
            vectors = store.vectors(list(chunks))
            out[kind] = {
                "chunks": sorted((c.id, c.content_hash) for c in chunks.values()),
                "embedded": len(vectors),
                "vectors": {chunks[k].id: v for k, v in vectors.items()},
                "commit": store.commit(),
            }
        finally:
            store.close()
    return out


def same(a: dict[str, object], b: dict[str, object]) -> str | None:
    for kind in ("docs", "code"):
        left, right = a[kind], b[kind]
        assert isinstance(left, dict)
        assert isinstance(right, dict)
        if left["chunks"] != right["chunks"]:
            return f"{kind}: chunks differ"
        if left["embedded"] != len(left["chunks"]):
            return f"{kind}: {len(left['chunks']) - left['embedded']} chunks without a vector"
        if left["commit"] != right["commit"]:
            return f"{kind}: commit {left['commit']} != {right['commit']}"
        for chunk_id, vector in right["vectors"].items():
            if not np.allclose(left["vectors"].get(chunk_id, np.zeros_like(vector)), vector, atol=1e-4):
                return f"{kind}: vector of {chunk_id} differs"
    return None


class References:
    """Clean rebuilds of each tree, made once in a scratch clone (same tree, so the same ids)."""

    def __init__(self, home: Path, scratch: Path) -> None:
        self.home, self.scratch, self.cache = home, scratch, {}

    def of(self, root: Path) -> dict[str, object]:
        head = git(root, "rev-parse", "HEAD").strip()
        if head not in self.cache:
            clone = self.scratch / head[:12]
            if clone.exists():
                shutil.rmtree(clone)
            git(self.scratch, "clone", "-q", str(root), str(clone))
            done = knowledge(clone, self.home, "reindex-all", "--wait", "-q")
            assert done.returncode == 0, done.stderr
            self.cache[head] = state(clone)
        return self.cache[head]


# ---- kill -9 at random moments ---------------------------------------------------------------------------------------
SCENARIOS = ("first build", "rebuild", "incremental", "embedding")


def prepare(scenario: str, root: Path, home: Path, rng: random.Random) -> list[str]:
    """Put the repository in the scenario's starting state; return the command that will be killed."""
    if scenario == "first build":
        shutil.rmtree(root / ".knowledge", ignore_errors=True)
        return ["reindex-all", "--wait", "-q"]
    if scenario == "rebuild":
        return ["reindex-all", "--wait", "-q"]
    docs = sorted((root / "docs").glob("*.md"))
    for path in rng.sample(docs, 3):
        path.write_text(path.read_text() + f"\n## Note {rng.randrange(10**9)}\n\nA new paragraph {rng.random()}.\n")
    victim = rng.choice(docs)
    victim_text = victim.read_text() + f"\n## Added again\n\n{rng.random()}\n"
    if rng.random() < 0.5:
        git(root, "mv", str(victim.relative_to(root)), f"docs/moved-{rng.randrange(10**9)}.md")
    else:  # a delete and an add, so the corpus keeps its size over hundreds of trials
        git(root, "rm", "-qf", str(victim.relative_to(root)))
        (root / "docs" / f"added-{rng.randrange(10**9)}.md").write_text(victim_text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "edit")
    if scenario == "incremental":
        return ["reindex-from-changes"]
    for cache in (home / "embeddings").glob("*.sqlite"):  # no cached vectors: the model really computes
        cache.unlink()
    return ["reindex-all", "--wait", "-q"]


def kill_trials(count: int, workdir: Path, home: Path, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    root = workdir / "kills"
    make_corpus(root, docs=24, code=10, seed=seed)
    refs = References(home, workdir / "kill-refs")
    (workdir / "kill-refs").mkdir()
    done = knowledge(root, home, "reindex-all", "--wait", "-q")
    assert done.returncode == 0, done.stderr
    durations: dict[str, float] = {}
    results: Counter[str] = Counter()
    failures: list[str] = []
    for trial in range(count):
        scenario = SCENARIOS[trial % len(SCENARIOS)]
        command = prepare(scenario, root, home, rng)
        if scenario not in durations:  # one uninterrupted run of each kind sets the window the kills fall in
            started = time.monotonic()
            knowledge(root, home, *command)
            durations[scenario] = time.monotonic() - started
            command = prepare(scenario, root, home, rng)
        process = subprocess.Popen(
            [*KNOWLEDGE, "-C", str(root), *command],
            env=env(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(rng.uniform(0.05, durations[scenario]))
        killed = process.poll() is None
        # Keep the window on the run as it goes now (the machine's load changes): shrink it when the run beat the
        # kill, widen it slowly when the kill landed.
        durations[scenario] *= 1.05 if killed else 0.8
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the process and any worker it forked
        process.wait()
        opened = knowledge(root, home, "status", "--json")
        # `status` exits 1 when there is no index yet (a first build killed before it published one): that opens
        no_index_yet = opened.returncode == 1 and '"exists": false' in opened.stdout
        if opened.returncode != 0 and not no_index_yet:
            results["unopenable"] += 1
            failures.append(f"trial {trial} ({scenario}): status failed: {opened.stderr.strip()[-200:]}")
        recovered = knowledge(root, home, "reindex-from-changes")
        knowledge(root, home, "embed", "-q")
        difference = same(state(root), refs.of(root)) if recovered.returncode in (0, 1) else "recovery run failed"
        results["killed mid-run" if killed else "finished before the kill"] += 1
        if difference:
            results["differs from clean rebuild"] += 1
            failures.append(f"trial {trial} ({scenario}): {difference}")
        leftovers = [p.name for p in (root / ".knowledge").iterdir() if ".tmp" in p.name or ".building" in p.name]
        if leftovers:
            results["stale temp files"] += 1
            failures.append(f"trial {trial} ({scenario}): left {leftovers}")
        if (trial + 1) % 20 == 0:
            print(f"kills: {trial + 1}/{count} trials, {dict(results)}", file=sys.stderr, flush=True)
    return {
        "trials": count,
        "by_scenario": dict(Counter(SCENARIOS[t % len(SCENARIOS)] for t in range(count))),
        "window_seconds": {k: round(v, 2) for k, v in durations.items()},
        "killed_mid_run": results["killed mid-run"],
        "unopenable": results["unopenable"],
        "differs_from_clean_rebuild": results["differs from clean rebuild"],
        "stale_temp_files_after_recovery": results["stale temp files"],
        "failures": failures[:20],
    }


# ---- commit storms with hooks installed ----------------------------------------------------------------------------
def knowledge_rss_kb() -> int:
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"knowledge" not in cmdline or b"faults.py" in cmdline:
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def knowledge_running() -> bool:
    return knowledge_rss_kb() > 0


def sample_rss(stop: threading.Event, peak: list[int]) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], knowledge_rss_kb())
        time.sleep(0.02)


def storms(count: int, commits: int, workdir: Path, home: Path, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    root = workdir / "storms"
    make_corpus(root, docs=40, code=10, seed=seed + 1)
    refs = References(home, workdir / "storm-refs")
    (workdir / "storm-refs").mkdir()
    for command in (["reindex-all", "--wait", "-q"], ["hooks", "install"]):
        done = knowledge(root, home, *command)
        assert done.returncode == 0, done.stderr
    hook_env = env(home)
    peaks: list[int] = []
    lost = 0
    failures: list[str] = []
    for storm in range(count):
        peak = [0]
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(stop, peak), daemon=True)
        sampler.start()
        docs = sorted((root / "docs").glob("*.md"))
        for n in range(commits):
            path = rng.choice(docs)
            path.write_text(path.read_text() + f"\nStorm {storm} commit {n}: {rng.random()}\n")
            subprocess.run(["git", "commit", "-qam", f"storm {storm}.{n}"], cwd=root, env=hook_env, check=True)
        deadline = time.monotonic() + 600
        time.sleep(1.0)
        while knowledge_running() and time.monotonic() < deadline:
            time.sleep(0.2)
        stop.set()
        sampler.join()
        peaks.append(peak[0])
        difference = same(state(root), refs.of(root))
        if difference:
            lost += 1
            failures.append(f"storm {storm}: {difference}")
        print(f"storms: {storm + 1}/{count}, peak {peak[0] / 1024:.0f} MB, lost {lost}", file=sys.stderr, flush=True)
    return {
        "storms": count,
        "commits_each": commits,
        "lost_updates": lost,
        "peak_rss_mb_all_knowledge_processes": [round(p / 1024) for p in peaks],
        "peak_rss_mb_max": round(max(peaks) / 1024),
        "failures": failures,
    }


# ---- a corpus of hostile files --------------------------------------------------------------------------------------
SENTINEL = "OUTSIDE-THE-REPOSITORY-SENTINEL"
CODE_SAMPLES = {
    "py": "def broken(:\n    return ]\n",
    "js": "function broken( {\n  return ;;\n",
    "ts": "function f(x: number {\n",
    "go": "package main\nfunc broken( {\n",
    "rs": "fn broken( {\n",
    "java": "class Broken { void m( }\n",
    "c": "int broken( {\n",
    "cpp": "class Broken { void m( };\n",
}


def hostile_file(n: int, rng: random.Random) -> tuple[str, bytes]:
    kind = n % 16
    if kind == 0:
        return f"docs/binary{n}.md", bytes(rng.randrange(256) for _ in range(2048))
    if kind == 1:
        return f"docs/latin1-{n}.md", "# Café\n\nrésumé naïve\n".encode("latin-1")
    if kind == 2:
        return f"docs/nul{n}.md", b"# Title\n\nbefore\x00after\n"
    if kind == 3:  # a 1 MB single line now and then, 25 KB lines otherwise
        return f"docs/longline{n}.md", b"# Long\n\n" + b"word " * (200_000 if n % 800 == 3 else 5_000) + b"\n"
    if kind == 4:  # a 100k-line file now and then
        return f"docs/lines{n}.md", b"# Many lines\n\n" + b"a line of text\n" * (100_000 if n % 1600 == 4 else 500)
    if kind == 5:
        bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        bomb += [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]" for i in range(8)]
        return f"docs/bomb{n}.md", ("---\n" + "\n".join(bomb) + "\ntitle: *i\n---\n# Bomb\n\nbody\n").encode()
    if kind == 6:
        return f"docs/list-front{n}.md", b"---\n- just\n- a list\n---\n# Title\n\nbody\n"
    if kind == 7:
        return f"docs/unclosed{n}.md", b"---\ndescription: never closed\n# Title\n\nbody\n"
    if kind == 8:
        return f"src/deep{n}.py", ("x = " + "[" * 3000 + "]" * 3000 + "\n").encode()
    if kind == 9:
        names = ["sp ace", "ünïcödé", "semi;colon", "quote'", "dash-", "-leading", "#hash", "emoji-🙂", "tab\tname"]
        return f"docs/{names[n % len(names)]}-{n}.md", b"# Odd name\n\nbody\n"
    if kind == 10:
        language = list(CODE_SAMPLES)[n % len(CODE_SAMPLES)]
        return f"src/syntax{n}.{language}", CODE_SAMPLES[language].encode()
    if kind == 11:
        return f"docs/mixed{n}.md", b"# Mixed\n\nutf-8 \xc3\xa9 then latin-1 \xe9 here\n"
    if kind == 12:
        return f"docs/bigtitle{n}.md", b"---\ntitle: " + b"x" * 300_000 + b"\n---\n# T\n\nbody\n"
    if kind == 13:
        return f"docs/crlf{n}.md", b"# CRLF\r\n\r\nline\r\n\xe2\x80\xa8sep\x0cform\r\n"
    if kind == 14:
        return f"docs/empty{n}.md", b""
    return f"docs/normal{n}.md", f"---\ndescription: normal {n}\n---\n# Normal {n}\n\nplain words {n}\n".encode()


def fuzz(count: int, workdir: Path, home: Path, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    root = workdir / "fuzz"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    outside = workdir / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Outside\n\n{SENTINEL}\n")
    written = 0
    for n in range(count):
        rel, data = hostile_file(n, rng)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written += 1
    links = {
        "docs/link-out.md": outside / "secret.md",
        "docs/link-passwd.md": Path("/etc/passwd"),
        "docs/link-proc.md": Path("/proc/self/status"),
        "docs/link-zero.md": Path("/dev/zero"),
        "docs/link-git.md": Path("../.git/config"),
        "docs/loop-a.md": Path("loop-b.md"),
        "docs/loop-b.md": Path("loop-a.md"),
    }
    for rel, target in links.items():
        (root / rel).symlink_to(target)
    (root / "docs" / "dir-out").symlink_to(outside, target_is_directory=True)
    (root / "docs" / "fifo.md").unlink(missing_ok=True)
    os.mkfifo(root / "docs" / "fifo.md")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hostile")
    before = resource_children_maxrss()
    started = time.monotonic()
    try:
        done = knowledge(root, home, "reindex-all", "--wait", "-q", "--json", timeout=1200)
        hung = False
    except subprocess.TimeoutExpired:
        done, hung = None, True
    seconds = time.monotonic() - started
    peak_mb = max(before, resource_children_maxrss()) / 1024
    crashed = done is None or done.returncode not in (0, 1)
    candidates: set[str] = set()
    from knowledge.config import load_settings

    settings, _ = load_settings(root)
    for kind in ("docs", "code"):
        candidates |= set(candidate_paths(root, settings, kind))
    accounted: set[str] = set()
    for kind in ("docs", "code"):
        store = LocalStore.open(root, kind)
        accounted |= set(store.files()) | {p.path for p in store.problems()}
        store.close()
    printable = {c.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for c in candidates}
    unnamed = sorted(printable - accounted)
    stored = b"".join(p.read_bytes() for p in (root / ".knowledge").rglob("*") if p.is_file())
    outside_leaks = [s for s in (SENTINEL, "root:x:0:0", "VmPeak") if s.encode() in stored]
    return {
        "files": written + len(links) + 2,
        "candidates": len(candidates),
        "crashes": int(crashed),
        "hangs": int(hung),
        "unnamed_skips": len(unnamed),
        "unnamed_examples": unnamed[:5],
        "outside_content_indexed": outside_leaks,
        "peak_rss_mb": round(peak_mb),
        "seconds": round(seconds, 1),
        "exit_code": None if done is None else done.returncode,
    }


def resource_children_maxrss() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


# ---- server and MCP attacks -----------------------------------------------------------------------------------------
TOKEN = "fault-suite-token-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(
    port: int, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": f"127.0.0.1:{port}", **(headers or {})}
        if body is not None and "Content-Length" not in sent:
            sent["Content-Length"] = str(len(body))
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.endheaders()
        if body is not None:
            connection.send(body)
        response = connection.getresponse()
        return response.status, response.read()
    except (ConnectionError, http.client.HTTPException, TimeoutError) as exc:
        return -1, str(exc).encode()
    finally:
        connection.close()


def wait_port(port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


def attacks(workdir: Path, home: Path) -> dict[str, object]:
    root = workdir / "attacks"
    make_corpus(root, docs=12, code=4, seed=7)
    outside = workdir / "attack-outside.md"
    outside.write_text(f"# Outside\n\n{SENTINEL}\n")
    (root / "docs" / "link-out.md").symlink_to(outside)
    (root / "links").mkdir()
    (root / "links" / "gitcfg").symlink_to("../.git/config")
    (root / ".gitignore").write_text(".env\n")
    (root / ".env").write_text("API_KEY=should-never-be-served\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "attack surface")
    assert knowledge(root, home, "reindex-all", "--wait", "-q").returncode in (0, 1)
    port = free_port()
    server = subprocess.Popen(
        [*KNOWLEDGE, "-C", str(root), "serve", "--port", str(port)],
        env=env(home, KNOWLEDGE_TOKEN=TOKEN),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    refused: Counter[str] = Counter()
    tried: Counter[str] = Counter()
    leaks: list[str] = []

    def attempt(kind: str, method: str, path: str, body: object = None, headers: dict[str, str] | None = None) -> None:
        raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        status, data = request(port, method, path, raw, headers)
        tried[kind] += 1
        if status != 200:
            refused[kind] += 1
        for secret in (SENTINEL, "should-never-be-served", "[core]", "root:x:0:0"):
            if secret.encode() in data:
                leaks.append(f"{kind} {path}: {secret}")

    try:
        wait_port(port)
        search = {"query": "cell biology"}
        attempt("no token", "POST", "/v1/search", search, {"Content-Type": "application/json"})
        attempt("no token", "GET", "/v1/status")
        attempt("wrong token", "POST", "/v1/search", search, {"Authorization": "Bearer wrong-wrong-wrong-wrong"})
        attempt("token in query string", "GET", f"/v1/status?token={TOKEN}")
        attempt("token in query string", "GET", f"/v1/status?access_token={TOKEN}")
        attempt("forged Host", "GET", "/v1/status", None, {**auth, "Host": "evil.example.com"})
        attempt("foreign Origin", "GET", "/v1/status", None, {**auth, "Origin": "http://evil.example.com"})
        for path in (
            "../../etc/passwd",
            "/etc/passwd",
            "%2e%2e/%2e%2e/etc/passwd",
            "docs/../../etc/passwd",
            "docs/doc000.md\x00.txt",
            ".git/config",
            "links/gitcfg",
            "docs/link-out.md",
            ".env",
            ".knowledge/docs.sqlite",
        ):
            attempt("path traversal", "POST", "/v1/source", {"path": path}, auth)
        attempt("oversized body", "POST", "/v1/search", b"{" + b" " * (10 << 20) + b"}", auth)
        attempt("negative Content-Length", "POST", "/v1/search", b"{}", {**auth, "Content-Length": "-1"})
        attempt("absurd k", "POST", "/v1/search", {"query": "x", "k": 4_000_000_000_000_000_000}, auth)
        attempt("absurd budget", "POST", "/v1/search", {"query": "x", "budget": 10**12}, auth)
        attempt("wrong types", "POST", "/v1/search", {"query": "x", "kind": ["docs"]}, auth)
        attempt("invalid JSON", "POST", "/v1/search", b"{not json", auth)
        attempt("deep JSON", "POST", "/v1/search", b"[" * 50_000 + b"]" * 50_000, auth)
        attempt("huge query", "POST", "/v1/search", {"query": "word " * 200_000}, auth)
        idle = []
        for _ in range(200):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
            idle.append(sock)
        started = time.monotonic()
        status, _ = request(port, "POST", "/v1/search", json.dumps(search).encode(), auth)
        after_idle = {"status": status, "seconds": round(time.monotonic() - started, 2)}
        for sock in idle:
            sock.close()
        results: list[int] = []
        lock = threading.Lock()

        def one() -> None:
            status, _ = request(port, "POST", "/v1/search", json.dumps(search).encode(), auth)
            with lock:
                results.append(status)

        threads = [threading.Thread(target=one) for _ in range(50)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        parallel = {
            "ok": results.count(200),
            "of": 50,
            "statuses": dict(Counter(results)),
            "seconds": round(time.monotonic() - started, 2),
        }
    finally:
        server.terminate()
        server.wait(timeout=30)
    mcp = mcp_attacks(root, home)
    return {
        "http": {kind: f"{refused[kind]}/{tried[kind]} refused" for kind in tried},
        "http_refused_all": all(refused[k] == tried[k] for k in tried),
        "after_200_idle_connections": after_idle,
        "parallel_searches": parallel,
        "content_leaked": leaks,
        "mcp": mcp,
    }


def mcp_attacks(root: Path, home: Path) -> dict[str, object]:
    port = free_port()
    server = subprocess.Popen(
        [*KNOWLEDGE, "-C", str(root), "mcp", "--http", "--port", str(port)],
        env=env(home, KNOWLEDGE_TOKEN=TOKEN),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}},
    }
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_source", "arguments": {}}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    outcome: Counter[str] = Counter()
    try:
        wait_port(port)
        for kind, extra in (
            ("no token", {}),
            ("wrong token", {"Authorization": "Bearer wrong-wrong-wrong-wrong"}),
            ("forged Host", {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example.com"}),
        ):
            for body in (initialize, call):
                status, _ = request(port, "POST", "/mcp", json.dumps(body).encode(), {**headers, **extra})
                outcome[f"{kind}: {'refused' if status in (401, 403, 421) else f'ANSWERED {status}'}"] += 1
        status, _ = request(
            port, "POST", "/mcp", json.dumps(initialize).encode(), {**headers, "Authorization": f"Bearer {TOKEN}"}
        )
        outcome[f"right token: {status}"] += 1
    finally:
        server.terminate()
        server.wait(timeout=30)
    return dict(outcome)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--storms", type=int, default=5)
    parser.add_argument("--storm-commits", type=int, default=20)
    parser.add_argument("--fuzz", type=int, default=5000)
    parser.add_argument("--no-attacks", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model", default=MODEL, help="the model every run uses (MiniLM keeps trials short)")
    parser.add_argument("--home", type=Path, help="KNOWLEDGE_HOME holding the built MiniLM (default: user cache)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ["FAULTS_MODEL"] = args.model
    from knowledge.fs import user_cache_dir

    models = args.home or user_cache_dir()
    report: dict[str, object] = {"model": args.model}
    with tempfile.TemporaryDirectory(prefix="knowledge-faults-") as scratch:
        workdir = Path(scratch)
        home = workdir / "home"  # its own vector cache; the built model is linked in, not rebuilt
        (home / "models").mkdir(parents=True)
        for built in (models / "models").iterdir():
            (home / "models" / built.name).symlink_to(built)
        sections = (
            ("attacks", lambda: None if args.no_attacks else attacks(workdir, home)),
            ("fuzz", lambda: fuzz(args.fuzz, workdir, home, args.seed) if args.fuzz else None),
            (
                "storms",
                lambda: storms(args.storms, args.storm_commits, workdir, home, args.seed) if args.storms else None,
            ),
            ("kills", lambda: kill_trials(args.kills, workdir, home, args.seed) if args.kills else None),
        )
        for name, run in sections:
            started = time.monotonic()
            result = run()
            if result is not None:
                report[name] = {**result, "wall_seconds": round(time.monotonic() - started, 1)}
                print(json.dumps({name: report[name]}), file=sys.stderr, flush=True)
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
