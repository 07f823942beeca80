"""Snapshots: `knowledge export` in one clone, `knowledge import` in another, answers identical, hooks catch up; every
refusal in one line with nothing replaced."""

import hashlib
import io
import json
import tarfile

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.store.local_snapshot import MANIFEST

from .conftest import HashingEmbedder, commit, git

FILES = {
    "docs/hooks.md": "---\ndescription: Git hooks.\n---\n# Git hooks\n\nThe hooks reindex after every commit.\n",
    "src/app.py": "def reindex_after_commit(repo):\n    return repo.reindex()\n",
}


def run(root, *args, expect=0):
    result = CliRunner().invoke(cli, ["-C", str(root), *args], obj={"embedder_factory": lambda s: HashingEmbedder()})
    assert result.exit_code == expect, (result.output, result.exception)
    return result


@pytest.fixture
def exported(git_repo, tmp_path):
    commit(git_repo, FILES, "first")
    run(git_repo, "reindex-all", "--quiet", "--wait")
    snapshot = tmp_path / "index.snapshot"
    said = run(git_repo, "export", str(snapshot)).stdout
    assert said.startswith("exported the index at ")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    return git_repo, snapshot, clone


def answer(root):
    return json.loads(run(root, "search", "when do the hooks reindex", "--json", "--threshold", "0").stdout)["results"]


def test_an_imported_index_answers_as_the_exporting_clone_and_catches_up_after_a_commit(exported):
    source, snapshot, clone = exported
    assert snapshot.stat().st_mode & 0o077 == 0
    said = run(clone, "import", str(snapshot)).stdout
    assert "imported the index of" in said
    assert answer(clone) == answer(source)
    status = json.loads(run(clone, "status", "--json").stdout)
    assert status["origin"].startswith("imported from a snapshot of ")
    commit(clone, {"docs/zebra.md": "---\ndescription: z\n---\n# Zebra\n\nzebra crossing stripes\n"}, "zebra")
    run(clone, "reindex-from-changes", "--quiet")  # what the post-commit hook runs
    found = json.loads(run(clone, "search", "zebra crossing stripes", "--json", "--threshold", "0").stdout)
    assert found["results"][0]["path"] == "docs/zebra.md"


def _rewrite(snapshot, out, change):
    """A copy of `snapshot` with `change(name, data) -> data` applied to each member (None: left out)."""
    with tarfile.open(snapshot) as archive, tarfile.open(out, "w") as target:
        for member in archive:
            data = archive.extractfile(member).read()
            changed = change(member.name, data)
            if changed is not None:
                member.size = len(changed)
                target.addfile(member, io.BytesIO(changed))
    return out


def _refused(clone, snapshot, words):
    before = sorted(p.name for p in (clone / ".knowledge").iterdir()) if (clone / ".knowledge").exists() else []
    result = run(clone, "import", str(snapshot), expect=1)
    assert words in result.output
    assert len(result.output.strip().splitlines()) == 1
    after = sorted(p.name for p in (clone / ".knowledge").iterdir()) if (clone / ".knowledge").exists() else []
    assert [n for n in after if not n.startswith(".")] == [n for n in before if not n.startswith(".")]


def test_a_tampered_or_truncated_snapshot_is_refused_and_nothing_is_replaced(exported, tmp_path):
    _, snapshot, clone = exported

    def flip(name, data):
        return data if name != "docs.sqlite" else data[:100] + bytes([data[100] ^ 1]) + data[101:]

    _refused(clone, _rewrite(snapshot, tmp_path / "tampered", flip), "does not match its checksum")
    _refused(clone, _rewrite(snapshot, tmp_path / "short", lambda n, d: None if n == "code.sqlite" else d), "truncated")
    cut = tmp_path / "cut"
    cut.write_bytes(snapshot.read_bytes()[: snapshot.stat().st_size // 2])
    _refused(clone, cut, str(cut))
    not_tar = tmp_path / "plain.txt"
    not_tar.write_text("hello")
    _refused(clone, not_tar, "not a readable knowledge snapshot")


def test_an_entry_the_manifest_does_not_name_is_refused(exported, tmp_path):
    _, snapshot, clone = exported

    sneaky = _rewrite(snapshot, tmp_path / "sneaky", lambda name, data: data)
    with tarfile.open(sneaky, "a") as archive:
        payload = b"import os\n"
        member = tarfile.TarInfo("../../evil.py")
        member.size = len(payload)
        archive.addfile(member, io.BytesIO(payload))
    _refused(clone, sneaky, "unexpected entry '../../evil.py'")
    assert not (clone.parent / "evil.py").exists()


def test_another_model_and_a_commit_the_clone_lacks_are_refused(exported, tmp_path):
    source, snapshot, clone = exported

    def other_model(name, data):
        if name != MANIFEST:
            return data
        manifest = json.loads(data)
        manifest["model_fingerprint"] = "0" * 16
        return json.dumps(manifest).encode()

    _refused(clone, _rewrite(snapshot, tmp_path / "model", other_model), "but this clone's model is")
    commit(source, {"docs/later.md": "---\ndescription: l\n---\n# Later\n\nlater\n"}, "after the clone")
    run(source, "reindex-from-changes", "--quiet")
    newer = tmp_path / "newer.snapshot"
    run(source, "export", str(newer))
    _refused(clone, newer, "is not in this clone; fetch it first")


def test_the_manifest_describes_every_file(exported):
    _, snapshot, _ = exported
    with tarfile.open(snapshot) as archive:
        names = archive.getnames()
        manifest = json.loads(archive.extractfile(MANIFEST).read())
        assert names[0] == MANIFEST
        for name, described in manifest["files"].items():
            data = archive.extractfile(name).read()
            assert len(data) == described["size"]
            assert hashlib.sha256(data).hexdigest() == described["sha256"]
    assert {"docs.sqlite", "code.sqlite", "history.sqlite"} <= set(manifest["files"])
    assert len(manifest["commit"]) == 40


@pytest.fixture
def served(exported):
    """The exported snapshot served over HTTP on 127.0.0.1 (a CI artifact store), with a 404 beside it."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    source, snapshot, clone = exported
    handler = functools.partial(Quiet, directory=str(snapshot.parent))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield source, f"http://127.0.0.1:{server.server_address[1]}/{snapshot.name}", clone
    server.shutdown()
    server.server_close()


def test_an_index_fetched_with_from_url_answers_as_the_exporting_clone_and_leaves_no_file(served):
    source, url, clone = served
    said = run(clone, "import", "--from", url, "--quiet").stdout
    assert "imported the index of" in said
    assert answer(clone) == answer(source)
    assert not list((clone / ".knowledge").glob("*.part"))


def test_a_url_that_cannot_be_fetched_is_refused_in_one_line_and_nothing_is_replaced(served):
    _, url, clone = served
    run(clone, "import", "--from", url, "--quiet")
    before = answer(clone)
    for wrong, said in (
        (url.replace("index.snapshot", "missing.snapshot"), "the server answered 404"),
        ("ftp://127.0.0.1/index.snapshot", "only http:// and https://"),
        ("http://127.0.0.1:1/index.snapshot", "could not be fetched"),
    ):
        result = run(clone, "import", "--from", wrong, "--quiet", expect=1)
        assert said in result.stderr
        assert wrong in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert answer(clone) == before
    assert not list((clone / ".knowledge").glob("*.part"))
    run(clone, "import", expect=2)  # neither a file nor a URL


def test_a_shared_store_refuses_export_and_import_in_one_line(exported, postgres_url, monkeypatch):
    source, snapshot, clone = exported
    monkeypatch.setenv("KNOWLEDGE_STORE", postgres_url)
    run(source, "reindex-all", "--quiet", "--wait")
    said = run(source, "export", str(snapshot.with_name("shared.snapshot")), expect=1).output
    assert said.strip().endswith("export reads a local index; a shared store is one index for every clone already")
    assert not snapshot.with_name("shared.snapshot").exists()
    said = run(clone, "import", str(snapshot), expect=1).output
    assert said.strip().endswith("import writes a local index; this repository's settings name a shared store")
    assert len(said.strip().splitlines()) == 1
