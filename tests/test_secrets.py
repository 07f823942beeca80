"""Secrets never reach the index, the embedder, search output, `show` or HTTP; line numbers stay the file's."""

import json
import threading

import pytest
from click.testing import CliRunner

from knowledge.cli import cli
from knowledge.config import load_settings
from knowledge.errors import ConfigError
from knowledge.kb import KnowledgeBase
from knowledge.path_gate import is_secret_file
from knowledge.secrets import SecretRedactor
from knowledge.server.backend import LocalBackend
from knowledge.server.http import KnowledgeHTTPServer

from .conftest import HashingEmbedder, commit, index_bytes
from .test_server import call

AWS_KEY = "AKIAZ7QWERTYUIOPLKJH"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBqkKEYPRIVATEKEYBODYx2Lw5o1p3r8kq0bZ0xM1wAAAJiV8s2rlfLNqw\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)
KEY_BODY = "QyNTUxOQAAACBqkKEYPRIVATEKEYBODYx2Lw5o1p3r8kq0bZ0xM1wAAAJiV8s2rlfLNqw"
PASSWORD = "Zq8!vR2#lmP0x"

CONFIG = f"""# Deployment settings for the billing service
aws_access_key_id = {AWS_KEY}
database_url = postgres://billing:{PASSWORD}@db.internal:5432/billing
retries = 3
"""
CODE = f'''"""Billing client."""

DEPLOY_KEY = """{PRIVATE_KEY}"""


def charge_customer(amount):
    """Charge the customer through the billing gateway."""
    password = request.form["password"]
    return gateway.charge(amount, password)
'''


@pytest.fixture
def repo(git_repo):
    commit(
        git_repo,
        {
            "config/billing.ini": CONFIG,
            "billing/client.py": CODE,
            "docs/billing.md": f"---\ndescription: billing\n---\n# Billing\n\nThe key `{AWS_KEY}` is rotated.\n",
            ".env": f"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nKEY={AWS_KEY}\n",
            "config/secrets.yaml": "billing:\n  signing: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        },
    )
    return git_repo


def open_kb(root):
    return KnowledgeBase.open(root, embedder_factory=lambda s: HashingEmbedder())


def test_well_known_shapes_are_replaced_and_lines_kept():
    text = f"a = 1\nkey = '{AWS_KEY}'\n{PRIVATE_KEY}token: ghp_{'a1B2' * 9}\nurl = https://u:{PASSWORD}@h/x\n"
    redacted = SecretRedactor().redact(text)
    assert redacted.text.count("\n") == text.count("\n")
    for secret in (AWS_KEY, KEY_BODY, "ghp_", PASSWORD):
        assert secret not in redacted.text
    assert [(r.line, r.kind) for r in redacted.redactions] == [
        (2, "aws-access-key"),
        (3, "private-key"),
        (7, "github-token"),
        (8, "password-in-url"),
    ]
    assert redacted.text.split("\n")[6] == "token: [redacted: github-token]"


@pytest.mark.parametrize(
    "line",
    [
        'password = request.POST["password"]',
        "token = get_token()",
        "initial_password = user.password",
        'template = "auth/password_change_form.html"',
        "token_url = https://example.com/oauth/token",
        "api_key: ${API_KEY}",
        "PASSWORD_RESET_TIMEOUT = 259200",
        'SECRET_KEY = os.environ["SECRET_KEY"]',
    ],
)
def test_code_that_only_names_a_secret_is_left_alone(line):
    assert SecretRedactor().redact(line + "\n").redactions == ()


def test_extra_patterns_and_secret_file_names():
    redacted = SecretRedactor([r"ACME-[0-9]{6}"]).redact("id ACME-123456 here\n")
    assert redacted.text == "id [redacted: custom-pattern] here\n"
    assert is_secret_file("deploy/.env", (".env",))
    assert is_secret_file("keys/server.pem", ("*.pem",))
    assert not is_secret_file("docs/env.md", (".env", "*.pem"))


def test_nothing_secret_reaches_the_index_search_show_or_http(repo):
    kb = open_kb(repo)
    report = kb.reindex_all()
    notes = {str(p) for p in report.warnings}
    assert "config/billing.ini: secret redacted at line 2 (aws-access-key)" in notes
    assert "config/billing.ini: secret redacted at line 3 (password-in-url)" in notes
    assert "billing/client.py: secret redacted at line 3 (private-key)" in notes
    assert {p.path: p.problem for p in report.skipped}["config/secrets.yaml"].startswith("a secrets file by its name")
    kept = index_bytes(repo)
    assert b"billing" in kept  # the unpacked texts are there to search
    for secret in (AWS_KEY, KEY_BODY, PASSWORD, "wJalrXUtnFEMI"):
        assert secret.encode() not in kept, secret

    status = kb.status()
    assert len(status.redactions) == 4
    assert all(not p.problem.startswith("secret redacted") for p in status.skipped)

    runner = CliRunner()
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    found = runner.invoke(cli, ["-C", str(repo), "search", "billing key rotated", "--json", "-k", "20"], obj=obj)
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["results"], "the redacted files are still searchable"
    shown = runner.invoke(cli, ["-C", str(repo), "show", "config/billing.ini"], obj=obj)
    assert "[redacted: aws-access-key]" in shown.stdout
    assert "3  database_url = postgres://billing:[redacted: password-in-url]@db.internal" in shown.stdout
    for output in (found.stdout, shown.stdout):
        for secret in (AWS_KEY, KEY_BODY, PASSWORD):
            assert secret not in output
    status_json = json.loads(runner.invoke(cli, ["-C", str(repo), "status", "--json"], obj=obj).stdout)
    assert status_json["secrets_redacted"] == 4

    httpd = KnowledgeHTTPServer(("127.0.0.1", 0), LocalBackend(open_kb(repo)), "t0ken-for-tests-0123456789")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        answers = [
            call(url, "/v1/search", {"query": "billing deploy key", "kind": "all", "threshold": -1}),
            call(url, "/v1/source", {"path": "billing/client.py"}),
            call(url, "/v1/source", {"path": "config/billing.ini"}),
        ]
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert [code for code, _ in answers] == [200, 200, 200]
    served = json.dumps([data for _, data in answers])
    assert answers[0][1]["results"]
    for secret in (AWS_KEY, KEY_BODY, PASSWORD):
        assert secret not in served


def test_redaction_can_be_turned_off_by_the_user(repo, monkeypatch):
    monkeypatch.setenv("KNOWLEDGE_REDACT_SECRETS", "false")
    kb = open_kb(repo)
    kb.reindex_all()
    assert AWS_KEY.encode() in index_bytes(repo)
    assert kb.status().redactions == ()


def test_a_bad_secret_pattern_is_one_clear_error(tmp_path):
    (tmp_path / "knowledge.toml").write_text('secret_patterns = ["(unclosed"]\n')
    with pytest.raises(
        ConfigError, match=r"knowledge\.toml: secret_patterns: '\(unclosed' is not a regular expression RE2 runs"
    ):
        load_settings(tmp_path)


def test_a_key_in_source_code_leaves_the_code_parseable():
    import ast

    source = "KEY = (\n" + "".join(f"    {line!r}\n" for line in PRIVATE_KEY.splitlines(keepends=True)) + ")\n"
    redacted = SecretRedactor().redact(source)
    assert KEY_BODY not in redacted.text
    assert [(r.line, r.kind) for r in redacted.redactions] == [(2, "private-key")]
    ast.parse(redacted.text)  # the quotes and escapes around the key material are kept


def test_redactions_are_one_count_in_the_summary_and_listed_by_status_verbose(repo):
    runner = CliRunner()
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    indexed = runner.invoke(cli, ["-C", str(repo), "reindex-all"], obj=obj)
    assert "secret redacted at line" not in indexed.stderr
    assert "4 secret(s) redacted in 3 file(s) (`knowledge status --verbose` lists them)" in indexed.stderr
    assert "config/secrets.yaml: a secrets file by its name" in indexed.stderr  # skipped files still one line each
    brief = runner.invoke(cli, ["-C", str(repo), "status"], obj=obj).stdout
    assert "secrets:    4 redacted in 3 file(s) (setting `redact_secrets`); --verbose lists them" in brief
    assert "secret redacted at line" not in brief
    verbose = runner.invoke(cli, ["-C", str(repo), "status", "--verbose"], obj=obj).stdout
    assert "config/billing.ini: secret redacted at line 2 (aws-access-key)" in verbose
    assert verbose.count("secret redacted at line") == 4


def test_secrets_in_test_fixtures_are_said_by_status_not_by_every_run(repo):
    commit(repo, {"tests/test_creds.py": f'AWS = "{AWS_KEY}"\n'})
    runner = CliRunner()
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    indexed = runner.invoke(cli, ["-C", str(repo), "reindex-all"], obj=obj)
    # the fixture's is counted apart, and both commands say the same total (569400d: reindex said 2, status 15)
    assert "4 secret(s) redacted in 3 file(s), 1 more in tests and fixtures" in indexed.stderr
    brief = runner.invoke(cli, ["-C", str(repo), "status"], obj=obj).stdout
    assert "secrets:    5 redacted in 4 file(s) (1 of them in tests and fixtures" in brief


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("PGPASSWORD=s3cr3tPass psql -h db -U app", "s3cr3tPass"),
        ("curl -H 'Authorization: Bearer abcDEF123456ghiJKL' https://api", "abcDEF123456ghiJKL"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("Server=db;Database=app;User Id=sa;Password=Sup3rS3cret!;", "Sup3rS3cret!"),
        ("git clone https://user:p@ss@host/repo.git", "p@ss"),
        ('{"auths": {"ghcr.io": {"auth": "dXNlcjpwYXNzd29yZA=="}}}', "dXNlcjpwYXNzd29yZA=="),
        ("mysql -u root -pSECRETpw1 billing", "SECRETpw1"),
        ("The password is hunter2!", "hunter2"),
        # round four: five shapes that passed on 0d65f9d
        ("REDIS_URL=redis://:Rd1sPw9x@cache.internal:6379/0", "Rd1sPw9x"),
        ("docker login -u deploy -p Dk8rPass77 registry.example.com", "Dk8rPass77"),
        ("sshpass -p Ssh9Pass1 ssh deploy@host", "Ssh9Pass1"),
        ("psql --password Pg5Secret2 -h db", "Pg5Secret2"),
        ("Tr0ub4dor&3 is the passphrase for the staging box", "Tr0ub4dor&3"),
        ("the passphrase is c0rrect-h0rse", "c0rrect-h0rse"),
    ],
)
def test_the_shapes_commands_headers_and_prose_give_a_password_are_redacted(line, secret):
    """Seven shapes that passed unredacted on 569400d (and a password holding `@`)."""
    redacted = SecretRedactor().redact(line + "\n")
    assert secret not in redacted.text
    assert redacted.redactions


@pytest.mark.parametrize(
    "line",
    [
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer YOUR_TOKEN",
        "PGPASSWORD=$PGPASSWORD psql",
        "the password is stored in the vault",
        "if password is None:",
        "mysql -p billing",
        "Password=;",
        "docker login --password-stdin registry.example.com",
        "sshpass -p $SSHPASS ssh host",
        "this is the password field",
        "redis://localhost:6379/0",
    ],
)
def test_placeholders_in_those_shapes_are_left_alone(line):
    assert SecretRedactor().redact(line + "\n").redactions == ()


def test_hostile_runs_are_scanned_once_and_lines_still_counted():
    """The runs that made the JWT, URL-password and assignment detectors retry from every word boundary (quadratic
    on 569400d; bench/secret_detectors.py times them): the same redactions and line numbers as a short text."""
    for unit in ("eyJ-", "token:", "https://a:"):
        assert SecretRedactor().redact(unit * 50_000).redactions == ()
    text = "x\n" + "password = 'aB3$xY9!zQ'\n" * 3
    assert [r.line for r in SecretRedactor().redact(text).redactions] == [2, 3, 4]


@pytest.mark.parametrize(
    "setting", ["redact_secrets = false\n", "secret_files = []\n", 'secret_files = [".env"]\nredact_secrets = false\n']
)
def test_a_tracked_setting_that_lowers_protection_needs_the_users_consent(repo, setting):
    """569400d: a tracked knowledge.toml with `secret_files = []` and `redact_secrets = false` made `show`, HTTP and
    MCP serve the user's untracked .env.local and unredacted tokens."""
    commit(repo, {"knowledge.toml": setting})
    (repo / ".env.local").write_text(f"AWS={AWS_KEY}\n")
    runner = CliRunner()
    obj = {"embedder_factory": lambda s: HashingEmbedder()}
    for args in (["show", ".env.local"], ["show", "config/billing.ini"], ["reindex-all"]):
        shown = runner.invoke(cli, ["-C", str(repo), *args], obj=obj)
        assert shown.exit_code == 1, shown.output
        assert "knowledge.toml" in shown.output
        assert "knowledge teams trust" in shown.output
        assert AWS_KEY not in shown.output
        assert len(shown.output.strip().splitlines()) == 1, shown.output
    trusted = runner.invoke(cli, ["-C", str(repo), "teams", "trust"], obj=obj)
    assert trusted.exit_code == 0, trusted.output
    assert "may set" in trusted.output
    assert runner.invoke(cli, ["-C", str(repo), "show", "config/billing.ini"], obj=obj).exit_code == 0
    # the file changes again (a pull): consent again
    (repo / "knowledge.toml").write_text("secret_files = []\nredact_secrets = false\n")
    if setting != (repo / "knowledge.toml").read_text():
        assert runner.invoke(cli, ["-C", str(repo), "show", "config/billing.ini"], obj=obj).exit_code == 1


def test_trust_with_nothing_to_trust_says_so_in_one_line(repo):
    commit(repo, {"knowledge.toml": "k = 5\n"})
    trusted = CliRunner().invoke(cli, ["-C", str(repo), "teams", "trust"])
    assert trusted.exit_code == 1
    assert "nothing to trust" in trusted.output
