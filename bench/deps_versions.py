"""Dependencies asked at the version installed (issue 71): one repository, two environments holding the same library
at two major versions (click 7.1.2 and 8.1.7, real wheels from the package registry), ten questions whose answer
changed between them, each asked through the product's own path (`knowledge search QUESTION --dep click --json`, a
new process, the defaults, first stage). A question is answered from the installed version when every result names
that version as its source and one of the first three is that version's answer (its entity, or its text at the
result's lines holding what only that version has).

Then both versions indexed into one shared cache, each environment asking again: the index asked must be the one of
the version its environment holds, not whichever the cache holds.

Then, in one warm process, `--scope all` (the repository and every installed dependency) over the same questions, and
the time to index a typical environment's direct dependencies: every installed dependency this project's own
environment declares, first stage, into a fresh cache.

    pip download --no-deps -d /tmp/depwheels click==7.1.2 && pip download --no-deps -d /tmp/depwheels click==8.1.7
    python bench/deps_versions.py --wheels /tmp/depwheels --work /tmp/deps-bench --out bench/results/deps-versions.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
VERSIONS = ("7.1.2", "8.1.7")

# (question, {version: (entities one of which answers it, text only that version's answer holds, file it is in)})
QUESTIONS: list[tuple[str, dict[str, tuple[set[str], str, str]]]] = [
    ("run a callback on the return values of a group's subcommands",
     {"7.1.2": ({"resultcallback"}, "", ""), "8.1.7": ({"result_callback"}, "", "")}),
    ("custom completion suggestions for a parameter value",
     {"7.1.2": (set(), "autocompletion", ""), "8.1.7": ({"shell_complete"}, "", "")}),
    ("completion item with a help string returned to the shell",
     {"7.1.2": (set(), "", "_bashcomplete.py"), "8.1.7": ({"CompletionItem"}, "", "")}),
    ("decorator passing a value from the context meta dictionary",
     {"7.1.2": ({"meta", "make_pass_decorator"}, "", ""), "8.1.7": ({"pass_meta_key"}, "", "")}),
    ("register a context manager cleaned up when the context closes",
     {"7.1.2": ({"call_on_close"}, "", ""), "8.1.7": ({"with_resource"}, "", "")}),
    ("version option reading the installed package version",
     {"7.1.2": (set(), "pkg_resources", ""), "8.1.7": (set(), "importlib", "")}),
    ("whether a callable default value is called",
     {"7.1.2": (set(), "callable(self.default)", ""), "8.1.7": (set(), "call: bool", "")}),
    ("the script a shell sources to enable completion",
     {"7.1.2": ({"get_completion_script"}, "", "_bashcomplete.py"), "8.1.7": (set(), "", "shell_completion.py")}),
    ("the width of the terminal",
     {"7.1.2": (set(), "get_terminal_size()[0]", ""), "8.1.7": (set(), "get_terminal_size().columns", "")}),
    ("command line arguments of the current process",
     {"7.1.2": ({"get_os_args"}, "", ""), "8.1.7": (set(), "sys.argv[1:]", "")}),
]  # fmt: skip


def run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=True)


def environment(work: Path, wheels: Path, version: str) -> Path:
    """A virtual environment holding click `version`, installed by uv from the wheel, offline."""
    venv = work / f"env-{version}"
    if not venv.exists():
        uv = shutil.which("uv") or "uv"
        subprocess.run([uv, "venv", "--no-config", "--quiet", str(venv)], check=True)
        subprocess.run(
            [uv, "pip", "install", "--no-config", "--quiet", "--no-index", "--find-links", str(wheels),
             "--python", str(venv / "bin" / "python"), f"click=={version}"],
            check=True,
        )  # fmt: skip
    return venv


def repository(work: Path) -> Path:
    repo = work / "repo"
    if not repo.exists():
        (repo / "app").mkdir(parents=True)
        (repo / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["click"]\n')
        (repo / ".gitignore").write_text(".venv\n")
        (repo / "app" / "cli.py").write_text(
            'import click\n\n\n@click.group()\ndef main():\n    """The app\'s commands."""\n\n\n'
            '@main.command()\ndef serve():\n    """Serve the app."""\n'
        )
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
        for args in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "app"]):
            subprocess.run(args, cwd=repo, env=env, check=True)
    return repo


def answered(hits: list[dict], version: str, expected: tuple[set[str], str, str], folder: Path) -> bool:
    """Every result from `version`, and one of the first three that version's answer."""
    entities, text, file = expected
    if not hits or any(hit.get("source") != f"click=={version}" for hit in hits):
        return False
    for hit in hits[:3]:
        name = (hit.get("symbol") or hit.get("title") or "").rsplit(".", 1)[-1]
        lines = (folder / hit["path"]).read_text().splitlines()[hit["line_start"] - 1 : hit["line_end"]]
        if (
            (entities and name in entities)
            or (text and text in "\n".join(lines))
            or (file and hit["path"].endswith(file))
        ):
            return True
    return False


def asked_cold(repo: Path, env: dict[str, str], version: str, home: Path) -> dict:
    folder = home / "deps" / "python" / f"click-{version}"
    started = time.monotonic()
    run(sys.executable, "-m", "knowledge", "-C", str(repo), "deps", "index", "click", cwd=repo, env=env)
    indexed = time.monotonic() - started
    rows, seconds = [], []
    for question, expected in QUESTIONS:
        started = time.monotonic()
        said = run(sys.executable, "-m", "knowledge", "-C", str(repo), "search", question, "--dep", "click", "--json",
                   cwd=repo, env=env)  # fmt: skip
        seconds.append(time.monotonic() - started)
        answer = json.loads(said.stdout)
        hits = [{**hit, "source": answer.get("source")} for hit in answer["results"]]
        rows.append(
            {
                "question": question,
                "installed_only": bool(hits) and all(hit["source"] == f"click=={version}" for hit in hits),
                "answered": answered(hits, version, expected[version], folder),
                "first": [f"{h['path']}:{h['line_start']} {h.get('symbol') or h.get('section')}" for h in hits[:3]],
            }
        )
    return {
        "version": version,
        "index_seconds": round(indexed, 2),
        "every_result_installed": sum(row["installed_only"] for row in rows),
        "answered": sum(row["answered"] for row in rows),
        "of": len(rows),
        "cold_p50_seconds": round(statistics.median(seconds), 3),
        "questions": rows,
    }


def shared_cache(work: Path, wheels: Path, repo: Path, models: Path) -> dict:
    """Both versions indexed into one cache, then each environment's questions asked again (cold, as above)."""
    home = work / "home-shared"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    (home / "models").symlink_to(models)
    env = {**os.environ, "KNOWLEDGE_HOME": str(home), "KNOWLEDGE_FILL": "0", "KNOWLEDGE_NO_DAEMON": "1",
           "PYTHONPATH": str(PROJECT)}  # fmt: skip
    link = repo / ".venv"
    for version in VERSIONS:  # the cache holds both before any question
        link.unlink()
        link.symlink_to(environment(work, wheels, version))
        run(sys.executable, "-m", "knowledge", "-C", str(repo), "deps", "index", "click", cwd=repo, env=env)
    held = sorted(p.name for p in (home / "deps" / "python").iterdir())
    out: dict = {"cache_holds": held, "versions": []}
    for version in VERSIONS:
        link.unlink()
        link.symlink_to(environment(work, wheels, version))
        found = asked_cold(repo, env, version, home)
        out["versions"].append({key: found[key] for key in ("version", "every_result_installed", "answered", "of")})
    return out


def warm_scope_all(repo: Path, rounds: int) -> dict:
    """`--scope all` asked in one process, as a server or the daemon asks it: the p50 and p95 over every question."""
    sys.path.insert(0, str(PROJECT))
    from knowledge.api.request import SearchRequest
    from knowledge.dependency_kbs import ScopedSearch
    from knowledge.kb import KnowledgeBase

    scoped = ScopedSearch(KnowledgeBase.open(repo))
    scoped.search(SearchRequest(query="warm up", scope="all"))
    seconds, sources = [], set()
    for _ in range(rounds):
        for question, _expected in QUESTIONS:
            started = time.perf_counter()
            response = scoped.search(SearchRequest(query=question, scope="all"))
            seconds.append(time.perf_counter() - started)
            sources |= {hit.source for hit in response.results}
    seconds.sort()
    return {
        "asks": len(seconds),
        "p50_ms": round(1000 * statistics.median(seconds), 1),
        "p95_ms": round(1000 * seconds[int(0.95 * (len(seconds) - 1))], 1),
        "sources_in_answers": sorted(s or "(repository)" for s in sources),
    }


def typical_environment(root: Path, env: dict[str, str]) -> dict:
    """Every installed dependency `root` declares, indexed (first stage) into the fresh cache of `env`."""
    listed = json.loads(
        run(sys.executable, "-m", "knowledge", "-C", str(root), "deps", "list", "--json", cwd=root, env=env).stdout
    )["dependencies"]
    installed = [d for d in listed if d["installed"]]
    rows, started = [], time.monotonic()
    for dependency in installed:
        began = time.monotonic()
        said = run(sys.executable, "-m", "knowledge", "-C", str(root), "deps", "index", dependency["name"],
                   cwd=root, env=env).stdout  # fmt: skip
        chunks = int(said.split(" indexed ", 1)[1].split()[0]) if " indexed " in said else 0
        rows.append({"name": dependency["name"], "version": dependency["installed"], "chunks": chunks,
                     "seconds": round(time.monotonic() - began, 2)})  # fmt: skip
        print(f"  {dependency['name']}=={dependency['installed']}: {chunks} chunks", flush=True)
    return {
        "root": str(root),
        "dependencies": len(rows),
        "chunks": sum(row["chunks"] for row in rows),
        "seconds": round(time.monotonic() - started, 1),
        "each": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", type=Path, required=True, help="a folder holding click 7.1.2's and 8.1.7's wheels")
    parser.add_argument("--work", type=Path, default=Path("/tmp/deps-bench"))
    parser.add_argument("--models", type=Path, default=Path.home() / ".cache" / "knowledge" / "models")
    parser.add_argument("--rounds", type=int, default=3, help="warm --scope all: rounds over the questions")
    parser.add_argument("--typical", default=str(PROJECT), help="whose direct dependencies to index ('': none)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    repo = repository(args.work)
    results: dict = {"versions": [], "questions": len(QUESTIONS)}
    for version in VERSIONS:
        home = args.work / f"home-{version}"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir()
        (home / "models").symlink_to(args.models)
        env = {**os.environ, "KNOWLEDGE_HOME": str(home), "KNOWLEDGE_FILL": "0", "KNOWLEDGE_NO_DAEMON": "1",
               "PYTHONPATH": str(PROJECT)}  # fmt: skip
        link = repo / ".venv"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(environment(args.work, args.wheels, version))
        run(sys.executable, "-m", "knowledge", "-C", str(repo), "reindex-all", "--quiet", cwd=repo, env=env)
        found = asked_cold(repo, env, version, home)
        said = f"indexed in {found['index_seconds']} s; a cold ask p50 {found['cold_p50_seconds']} s"
        print(f"click {version}: {found['answered']}/{found['of']} answered from the installed version; {said}")
        os.environ.update(env)
        found["warm_scope_all"] = warm_scope_all(repo, args.rounds)
        print(f"  warm --scope all: p50 {found['warm_scope_all']['p50_ms']} ms, "
              f"p95 {found['warm_scope_all']['p95_ms']} ms", flush=True)  # fmt: skip
        results["versions"].append(found)
    results["shared_cache"] = shared = shared_cache(args.work, args.wheels, repo, args.models)
    for row in shared["versions"]:
        print(
            f"shared cache ({', '.join(shared['cache_holds'])}), click {row['version']} installed: every result "
            f"from it {row['every_result_installed']}/{row['of']}, answered {row['answered']}/{row['of']}"
        )
    if args.typical:
        home = args.work / "home-typical"
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir()
        (home / "models").symlink_to(args.models)
        env = {**os.environ, "KNOWLEDGE_HOME": str(home), "KNOWLEDGE_FILL": "0", "KNOWLEDGE_NO_DAEMON": "1",
               "PYTHONPATH": str(PROJECT)}  # fmt: skip
        results["typical"] = typical_environment(Path(args.typical), env)
        run(sys.executable, "-m", "knowledge", "-C", args.typical, "reindex-all", "--quiet", cwd=repo, env=env)
        os.environ.update(env)
        results["typical"]["warm_scope_all"] = warm_scope_all(Path(args.typical), args.rounds)
        typical = results["typical"]
        print(f"typical environment: {typical['dependencies']} dependencies, {typical['chunks']} chunks, "
              f"{typical['seconds']} s; warm --scope all over them p50 {typical['warm_scope_all']['p50_ms']} ms, "
              f"p95 {typical['warm_scope_all']['p95_ms']} ms", flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
