"""Security round four: `locate` linear in every input, long pastes read as their head and tail, and no secret a
commit message carried ever leaves through its history evidence (CLI, HTTP, MCP, `history.sqlite`, snapshots)."""

import json
import sqlite3
import threading
import time

import pytest

from knowledge import history
from knowledge.issue import READ_HEAD, READ_TAIL, clip_paste, read_issue
from knowledge.secrets import SecretRedactor

from .conftest import commit
from .test_locate import located, run, shop

__all__ = ["shop"]  # the fixture

AWS_KEY = "AKIAZ7QWERTYUIOPLKJH"
GITHUB_TOKEN = "ghp_" + "Zq8vR2lmP0xTy7Wn3Kd5Ub9Hs1Je4Gc6Af0i"
SECRET_MESSAGE = f"Fix rounding of amounts\n\nDeploy with AWS {AWS_KEY}, gh {GITHUB_TOKEN}, password=Zq8vR2lmP0xQw\n"


@pytest.mark.parametrize(
    "text",
    [
        "x" + "\n" * 64_000 + "y",  # ^\s* across lines: 63,000 newlines took 189 s on 0d65f9d
        "    " + "a." * 8_000,  # a call chain without its call: 2 s
        " \n\t" * 21_000,
        "ValueError:" + "\n" * 60_000,
        "File " * 12_000,
        "a/" * 32_000,
        "a(" * 32_000,
    ],
    ids=["blank-lines", "dots", "whitespace", "exception", "file-words", "slashes", "calls"],
)
def test_reading_a_hostile_text_takes_linear_time(text):
    started = time.monotonic()
    read_issue(text)
    assert time.monotonic() - started < 2.0  # linear: tens of milliseconds; the patterns replaced took minutes


def test_a_dotted_name_of_thousands_of_parts_costs_no_walk_per_part(shop):
    started = time.monotonic()
    run(shop, "locate", "-", stdin="parse_price fails for " + "shop." * 12_000 + "parser")
    assert time.monotonic() - started < 10  # 12,000 prefixes each matched against every file took minutes


def test_a_long_paste_is_read_as_its_head_and_tail_with_a_line_saying_so(shop):
    log = "CI run 42 failed on main\n" + "noise line of the build log\n" * 20_000
    log += 'Traceback (most recent call last):\n  File "/ci/checkout/shop/parser.py", line 7, in parse_price\n'
    log += "ValueError: unbalanced bracket in price expression\n"
    assert len(log) > 500_000
    data, paths = located(shop, log)
    assert paths[0] == "shop/parser.py"  # the tail's frame was read
    read, left_out = clip_paste(log)
    assert data["left_out_chars"] == left_out == len(log) - len(read)
    assert READ_HEAD + READ_TAIL - 200 < len(read) <= READ_HEAD + READ_TAIL  # each part cut at a line's end
    assert read.startswith("CI run 42 failed on main\n")
    text = run(shop, "locate", "-", stdin=log).stdout
    assert text.splitlines()[0].startswith("read 63,9")
    assert "in the middle left out" in text.splitlines()[0]
    short, left_out = clip_paste("a short issue\n")
    assert (short, left_out) == ("a short issue\n", 0)
    assert "left_out_chars" not in located(shop, "parse_price fails")[0]


def test_a_long_locate_never_holds_up_a_search_on_the_server(shop):
    from knowledge.kb import KnowledgeBase
    from knowledge.server.backend import LocalBackend
    from knowledge.server.http import KnowledgeHTTPServer

    from .conftest import HashingEmbedder
    from .test_server import TOKEN, call

    kb = KnowledgeBase.open(shop, embedder_factory=lambda s: HashingEmbedder())
    server = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(kb), TOKEN)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        hostile = "x" + "\n" * 60_000 + "    " + "a." * 1_000
        slow = threading.Thread(target=call, args=(url, "/v1/locate", {"query": hostile}))
        slow.start()
        time.sleep(0.2)
        started = time.monotonic()
        status, _ = call(url, "/v1/search", {"query": "parse a price"})
        assert status == 200
        assert time.monotonic() - started < 5
        slow.join(timeout=30)
    finally:
        server.shutdown()
        server.server_close()


def test_secrets_in_commit_messages_never_leave_through_history(shop, tmp_path):
    commit(shop, {"shop/money.py": "def format_amount(value, currency):\n    return round(value, 2)\n"}, SECRET_MESSAGE)
    run(shop, "reindex-from-changes", "--quiet")
    data, _ = located(shop, "rounding of amounts deploy")
    text = run(shop, "locate", "rounding of amounts deploy").stdout
    with sqlite3.connect(history.history_path(shop)) as db:
        stored = "\n".join(message for (message,) in db.execute("SELECT message FROM messages"))
    snapshot = tmp_path / "index.snapshot"
    run(shop, "export", str(snapshot))
    exported = snapshot.read_bytes()
    for secret in (AWS_KEY, GITHUB_TOKEN, "Zq8vR2lmP0xQw"):
        assert secret not in json.dumps(data)
        assert secret not in text
        assert secret not in stored
        assert secret.encode() not in exported
    assert "[redacted: " in stored
    assert "Fix rounding of amounts" in stored  # the words stay: they are the evidence


def test_a_history_captured_before_redaction_is_read_again(shop):
    path = history.history_path(shop)
    with sqlite3.connect(path) as db:  # as 0d65f9d left it: messages as written, no capture mark
        db.execute("DELETE FROM meta WHERE key = 'capture'")
        db.execute("UPDATE messages SET message = message || ?", (f" {AWS_KEY}",))
    report = history.sync(shop, SecretRedactor())
    assert report is not None
    assert report.added == report.commits  # every commit read again
    with sqlite3.connect(path) as db:
        assert AWS_KEY not in "\n".join(m for (m,) in db.execute("SELECT message FROM messages"))
