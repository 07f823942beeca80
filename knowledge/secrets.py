"""Secrets kept out of the index: well-known credential shapes are replaced by a placeholder before a file is chunked,
embedded, stored or served, and files that are secrets by name are never read.

The detectors follow detect-secrets 1.5's (private keys, cloud and service tokens, passwords in URLs, keyword
assignments), written as one pass of regular expressions so that redaction costs little next to chunking. Line
structure is kept exactly (a multi-line key becomes one placeholder line and blank lines), so line numbers agree with
the file on disk.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .patterns import PatternMatch, fixed_regex, user_regex
from .records import REDACTION_NOTE

PLACEHOLDER = "[redacted: {kind}]"

# Every detector below runs over every file a repository holds, so each is compiled by RE2 (patterns.fixed_regex):
# time linear in the text, whatever the text (Python's `re` retried the JWT and URL shapes from every word boundary of
# a hostile file: 80,000 characters took 4 s).
_PRIVATE_KEY = fixed_regex(
    r"(?s)-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)"
)

_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/=]{16,}")

# (kind, hints, pattern): the whole match is the secret, or its group `secret` where it has one. A pattern runs only
# on texts holding one of its hints (plain substrings, matched in the lower-cased text where `(?i)` says so), which
# keeps the pass fast: most files hold none.
_TOKEN_SHAPES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("aws-access-key", ("A3T", "AKIA", "ASIA", "ABIA", "ACCA"), r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"),
    ("github-token", ("gh", "github_pat_"), r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,}"),
    ("gitlab-token", ("glpat-",), r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", ("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-webhook", ("hooks.slack.com",), r"https://hooks\.slack\.com/services/T\w+/B\w+/\w+"),
    ("stripe-key", ("_live_",), r"\b(?:sk|rk)_live_[0-9a-zA-Z]{24,}"),
    ("google-api-key", ("AIza",), r"AIza[0-9A-Za-z_\-]{35}"),
    ("openai-key", ("sk-",), r"\bsk-(?:proj-|svcacct-|ant-[a-z0-9]+-)?[A-Za-z0-9_\-]{32,}"),
    ("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", ("pypi-",), r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"),
    ("sendgrid-key", ("SG.",), r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b"),
    ("twilio-key", ("SK",), r"\bSK[0-9a-fA-F]{32}\b"),
    ("mailchimp-key", ("-us",), r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    ("square-token", ("sq0",), r"sq0(?:atp|csp)-[0-9A-Za-z_\-]{22,43}"),
    ("jwt", ("eyJ",), r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("azure-storage-key", ("AccountKey=",), r"AccountKey=[A-Za-z0-9+/=]{80,}"),
)
_TOKENS = tuple((kind, hints, fixed_regex(pattern)) for kind, hints, pattern in _TOKEN_SHAPES)

# Credentials in the shapes commands, headers and connection strings give them: the group `secret` is redacted
# unless it is a placeholder (`$PGPASSWORD`, `<token>`, `YOUR_TOKEN`). Hints are lower-case, found in the lower-cased
# text.
_CONTEXT_SHAPES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # `PGPASSWORD=… psql`, `API_TOKEN=… ./deploy`: an environment assignment before a command
    (
        "secret-in-command",
        ("passw", "pwd", "secret", "token", "key"),
        r"(?:^|[\s;&|(`])[A-Z][A-Z0-9_]*(?:PASSW(?:OR)?D|PWD|SECRET|TOKEN|API_?KEY|ACCESS_KEY|PRIVATE_KEY|AUTH_KEY)"
        r"[A-Z0-9_]*=(?P<secret>[^\s'\"`;&|$<>(){}]{3,})[ \t]+[^\s#]",
    ),
    # `Authorization: Bearer …` / `Basic …` / `Token …`, in a header, a curl line or a config
    (
        "authorization-header",
        ("authorization",),
        r"(?i)authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token|digest)[ \t]+"
        r"(?P<secret>[A-Za-z0-9._~+/\-]{8,}=*)",
    ),
    # `Server=db;User Id=app;Password=…;`: a connection string's password, up to its `;`
    (
        "connection-string-password",
        ("passw", "pwd"),
        r"(?i)(?:^|[;\"'\s])(?:password|pwd)[ \t]*=[ \t]*(?P<secret>[^;\"'\s]{3,})[ \t]*;",
    ),
    # docker's config.json: `"auth": "<base64 user:password>"`
    ("registry-auth", ('"auth"',), r"\"auth\"[ \t]*:[ \t]*\"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})\""),
    # `mysql -pSECRET`, `mysqldump --password=SECRET`
    (
        "password-in-command",
        ("mysql", "--password="),
        r"(?:\bmysql(?:dump|admin|import|show|check|slap)?\b[^\n]*?[ \t]-p(?P<secret>[^\s'\"`;&|$<>-][^\s'\"`;&|]{2,})"
        r"|--password=[\"']?(?P<flag>[^\s'\"`;&|$<>][^\s'\"`;&|]{2,}))",
    ),
    # `sshpass -p SECRET ssh …`, `docker login -u me -p SECRET`, `psql --password SECRET` (a flag and its value)
    (
        "password-in-command",
        ("sshpass", "docker", "--password"),
        r"(?:\b(?:sshpass|docker[ \t]+login)\b[^\n]*?[ \t]-p[ \t]*|--password[ \t]+)"
        r"(?P<secret>[^\s'\"`;&|$<>-][^\s'\"`;&|]{2,})",
    ),
    # prose: `the password is …`, `the passphrase was …`
    (
        "password-in-prose",
        ("password is", "password was", "passwd is", "passphrase is", "passphrase was"),
        r"(?i)\bpass(?:word|wd|phrase)[ \t]+(?:is|was)[ \t]*:?[ \t]*[\"'`]?(?P<secret>[^\s\"'`,;]{4,}?)[\"'`.,;]?"
        r"(?:\s|\z)",
    ),
    # prose the other way round: `Tr0ub4dor&3 is the passphrase`
    (
        "password-in-prose",
        (" is the pass", " is our pass", " is my pass", " is the secret"),
        r"(?i)(?:^|[\s(])[\"'`]?(?P<secret>[^\s\"'`,;()]{4,})[\"'`]?[ \t]+is[ \t]+(?:the|our|my)[ \t]+"
        r"(?:password|passphrase|passwd|secret)\b",
    ),
)
_CONTEXTS = tuple((kind, hints, fixed_regex(pattern)) for kind, hints, pattern in _CONTEXT_SHAPES)
_PLACEHOLDER_VALUE = re.compile(
    r"(?i)^(?:[$%<{\[*.]|x{3,}|\*+|\.+|-+|(?:your|my|the|some)[_\-.].*|(?:token|secret|password|passwd|"
    r"changeme|redacted|example|placeholder|dummy|none|null|true|false|\w+_(?:token|key|secret|password))$)"
)

# scheme://user:password@host (redis://:password@host: no user): the password part only; a password may hold `@`:
# the last `@` before the host ends it.
_URL_PASSWORD = fixed_regex(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'\"]*:(?P<secret>[^\s/'\"]{2,})@[^\s/'\"@]")
_PLACEHOLDER_WORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret", "foo", "bar", "baz", "user", "x"})

# A secret-named key assigned a literal: `password = "..."`, `API_KEY: ...`, `"client_secret": "..."`: the key (a run
# of key characters holding a secret word), its operator, then a quoted literal or a bare value to the line's end
# (a trailing comment allowed).
_SECRET_WORDS = (
    "passw", "pwd", "secret", "token", "apikey", "api_key", "api-key", "access_key", "access-key",
    "private_key", "private-key", "privatekey", "auth_key", "credential",
)  # fmt: skip
_ASSIGNMENT = fixed_regex(
    r"(?P<key>[A-Za-z0-9_.\-]*(?i:" + "|".join(w.replace("-", r"\-") for w in _SECRET_WORDS) + r")[A-Za-z0-9_.\-]*)"
    r"[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(?:\"(?P<dq>[^\"'`\s]{8,})\"|'(?P<sq>[^\"'`\s]{8,})'|`(?P<bq>[^\"'`\s]{8,})`"
    r"|(?P<bare>[^\s\"'`,;#()\[\]{}]{12,})[ \t]*(?:#[^\n]*)?(?:\n|\z))"
)
_NOT_A_VALUE = re.compile(
    r"""(?x)^(?:
        \$\{?[\w.]+\}?|\{\{.*\}\}|%\(.*\)s|<[^>]*>|\[redacted:.*     # templates, placeholders
        |(?:os\.|process\.|env\.|settings\.|self\.|config\.|getenv|environ)\S*  # references, not literals
        |[A-Za-z_][\w.]*\(.*                                            # a call
        |[a-z][a-z0-9+.\-]*://.*                                         # a URL (its password is found apart)
        |[_\W]*[A-Za-z]+(?:[_/.\-:\ ]+[A-Za-z]+)*[_\W]*                  # words, paths, names: no digits, no noise
        |(?:x+|\*+|\.+|-+|_+|none|null|true|false|changeme|redacted|dummy|example|placeholder|your[_\-].*)
    )$""",
    re.IGNORECASE,
)
# A bare value that is an attribute path (`user.password`) or a class name is a reference in code, not a literal.
_REFERENCE = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+|[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")

# Keys that name something about a secret rather than the secret: `token_url`, `password_min_length`.
_DESCRIBES_A_SECRET = re.compile(
    r"(?i)[_.\-](?:url|uri|endpoint|path|file|dir|name|field|label|id|length|len|type|kind|timeout|ttl|expiry|expires|"
    r"header|prefix|suffix|format|mode|count|size|min|max|policy|hint|validator|env|var|form|template|view)$"
)


@dataclass(frozen=True, slots=True)
class Redaction:
    line: int  # 1-based
    kind: str


@dataclass(frozen=True, slots=True)
class Redacted:
    text: str
    redactions: tuple[Redaction, ...]


_CHARACTER_CLASSES = tuple(re.compile(p) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
_LOWER_WORDS = re.compile(r"[a-z]+(?:[_\-][a-z]+)*")


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_secret(value: str) -> bool:
    if _NOT_A_VALUE.match(value):
        return False
    # Words and identifiers (`password_field_name`) are not secrets; a mix of cases, digits and symbols or a random
    # string is. detect-secrets' keyword detector takes any quoted literal; this keeps code readable in the index.
    classes = sum(bool(pattern.search(value)) for pattern in _CHARACTER_CLASSES)
    return classes >= 2 and not _LOWER_WORDS.fullmatch(value) and _entropy(value) >= 3.0


class SecretRedactor:
    """Replaces every secret in a text; `extra_patterns` (regular expressions) add to the built-in detectors."""

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        self._extra = [user_regex(p) for p in extra_patterns]

    def redact(self, text: str) -> Redacted:
        found: list[tuple[int, int, str]] = []  # (start, end, kind) in text offsets
        if "PRIVATE KEY" in text:
            found.extend((m.start(), m.end(), "private-key") for m in _PRIVATE_KEY.finditer(text))
        lower = text.lower()
        for kind, hints, pattern in _CONTEXTS:
            if any(hint in lower for hint in hints):
                found.extend(_secret_groups(kind, pattern.finditer(text)))
        for kind, hints, pattern in _TOKENS:
            if any(hint in text for hint in hints):
                found.extend((m.start(), m.end(), kind) for m in pattern.finditer(text))
        if "://" in text:
            for match in _URL_PASSWORD.finditer(text):
                if (match.group("secret") or "").lower() not in _PLACEHOLDER_WORDS:
                    found.append((match.start("secret"), match.end("secret"), "password-in-url"))
        if any(word in lower for word in _SECRET_WORDS):
            found.extend(_assignments(text))
        for extra in self._extra:
            found.extend((m.start(), m.end(), "custom-pattern") for m in extra.finditer(text) if m.end() > m.start())
        if not found:
            return Redacted(text, ())
        return _apply(text, found)


def _secret_groups(kind: str, matches: Iterable[PatternMatch]) -> Iterator[tuple[int, int, str]]:
    for match in matches:
        group = "secret" if match.group("secret") is not None else "flag"
        value = match.group(group) or ""
        if kind == "password-in-prose" and value.rstrip(":.!?)").isalpha():
            continue  # `the password is stored in…`, `password is None`: words, not a password
        if value and not _PLACEHOLDER_VALUE.match(value) and value.lower() not in _PLACEHOLDER_WORDS:
            yield match.start(group), match.end(group), kind


MAX_VALUE_CHARS = 4096  # a longer "value" is data (minified code, a blob), not a credential someone assigned


_VALUE_GROUPS = ("dq", "sq", "bq", "bare")


def _assignments(text: str) -> list[tuple[int, int, str]]:
    found = []
    for match in _ASSIGNMENT.finditer(text):
        key, *values = match.groups()  # (key, dq, sq, bq, bare): one call, not one a group (RE2's are costly)
        at, value = next((i, v) for i, v in enumerate(values) if v is not None)
        group = _VALUE_GROUPS[at]
        if _DESCRIBES_A_SECRET.search(key or "") or len(value) > MAX_VALUE_CHARS:
            continue
        if group == "bare" and _REFERENCE.fullmatch(value):
            continue
        if _looks_secret(value):
            found.append((match.start(group), match.end(group), "secret-assignment"))
    return found


def _apply(text: str, found: list[tuple[int, int, str]]) -> Redacted:
    found.sort()
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in found:
        if merged and start < merged[-1][1]:  # overlapping detections: the earliest (then widest) wins
            previous = merged[-1]
            merged[-1] = (previous[0], max(previous[1], end), previous[2])
            continue
        merged.append((start, end, kind))
    parts: list[str] = []
    redactions: list[Redaction] = []
    position = 0
    line = 1
    for start, end, kind in merged:
        parts.append(text[position:start])
        secret = text[start:end]
        if kind == "private-key":
            # Only the key material goes: the BEGIN/END lines, quotes and escapes around it stay, so a key kept in a
            # source file leaves that file parseable (and every line where it was).
            parts.append(_KEY_MATERIAL.sub(PLACEHOLDER.format(kind=kind), secret))
        else:
            # Keep every newline of a multi-line secret so that line numbers stay those of the file.
            parts.append(PLACEHOLDER.format(kind=kind) + "\n" * secret.count("\n"))
        line += text.count("\n", position, start)  # counted from the previous redaction: linear in the text
        redactions.append(Redaction(line, kind))
        line += secret.count("\n")
        position = end
    parts.append(text[position:])
    return Redacted("".join(parts), tuple(redactions))


def redaction_note(line: int, kind: str) -> str:
    return f"{REDACTION_NOTE} at line {line} ({kind})"
