"""Settings and where each came from: the one place that reads `knowledge.toml` and environment variables.

Precedence, highest first: command-line option > KNOWLEDGE_* variable > the seed's SEARCH_* variable >
`knowledge.toml` in the repository root > the model's calibrated default (thresholds) > built-in default.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .fs import user_cache_dir
from .patterns import PatternError, glob, name_glob, user_regex
from .trusted import record_trust, trusted_entry, trusted_store

# The built forms of a model. fp32: the exported graph as is. int8: 8-bit block-wise weights on every MatMul.
# int8-dynamic: dynamic per-channel int8 (weights and activations) on every MatMul but the FFN down-projection, which
# stays block-wise: ~1.3x int8's throughput, further from fp32 (docs/models.md).
MODEL_VARIANTS = ("fp32", "int8", "int8-dynamic")

CONFIG_FILE = "knowledge.toml"
DEFAULT_DOC_INCLUDE = ("**/*.md", "**/*.markdown", "**/*.mdx")
# Languages with entity chunks (tree-sitter), then text files indexed as line chunks.
DEFAULT_CODE_INCLUDE = tuple(
    f"**/*.{ext}"
    for ext in (
        "py",
        "js",
        "mjs",
        "cjs",
        "jsx",
        "ts",
        "tsx",
        "go",
        "rs",
        "java",
        "c",
        "h",
        "cc",
        "cpp",
        "cxx",
        "hpp",
        "hh",
        "hxx",
        "sh",
        "bash",
        "rb",
        "php",
        "cs",
        "kt",
        "swift",
        "scala",
        "lua",
        "kts",
        "exs",
        "ex",
        "hs",
        "zig",
        "sc",
        "sql",
        "toml",
        "yaml",
        "yml",
        "cfg",
        "ini",
    )
)
# File names (globs on the last path component) that hold secrets by nature; setting `secret_files` replaces them
# (corpus.read_source checks them; kept here so that settings load without compiling the secret detectors).
DEFAULT_SECRET_FILES = (
    ".env",
    ".env.*",
    "*.env",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "secrets.yaml",
    "secrets.yml",
    "secrets.json",
    "secrets.toml",  # .streamlit/secrets.toml
    ".envrc",  # direnv: exported credentials
    ".htpasswd",
    "*.tfstate",
    "*.tfstate.*",  # terraform's state (and its backups) holds every resource's secrets in clear
    "*.tfvars",
    "*.tfvars.json",
)

# Test fixture data: sample inputs, not the project's code or docs (both kinds; `exclude`/`code_exclude` replace or
# add to them).
DEFAULT_FIXTURE_EXCLUDE = (
    "**/testdata/**",
    "**/test_data/**",
    "**/tests/data/**",
    "**/test/data/**",
    "**/fixtures/**",
    "**/__fixtures__/**",
)
# Generated, vendored and lock files: configurable with `code_exclude`.
DEFAULT_CODE_EXCLUDE = (
    *DEFAULT_FIXTURE_EXCLUDE,
    "**/node_modules/**",
    "**/vendor/**",
    "**/third_party/**",
    "**/dist/**",
    "**/build/**",
    "**/.venv/**",
    "**/venv/**",
    "**/site-packages/**",
    "**/*.min.js",
    "**/*.lock",
    "**/package-lock.json",
    "**/pnpm-lock.yaml",
    "**/*_pb2.py",
    "**/*_pb2_grpc.py",
    "**/*.pb.go",
    "**/*.generated.*",
    "**/*.gen.go",
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved settings; thresholds left None mean "use the model's calibrated value"."""

    model: str = "all-mpnet-base-v2"
    model_variant: str = "fp32"  # unset, the facade resolves it: an index's own, else the model's (mpnet: int8)
    home: Path = Path()
    include: tuple[str, ...] = DEFAULT_DOC_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_FIXTURE_EXCLUDE
    code_include: tuple[str, ...] = DEFAULT_CODE_INCLUDE
    code_exclude: tuple[str, ...] = DEFAULT_CODE_EXCLUDE
    max_file_bytes: int = 2_000_000
    snapshot_max_bytes: int = 16_000_000_000  # `import` refuses a bigger snapshot (a 195k-chunk index is ~1 GB)
    k: int = 10
    threshold: float | None = None
    full_threshold: float | None = None
    budget: int = 2000
    redact_secrets: bool = True
    rank_rules: bool = True  # the code ranking rules (definition, file names, path priors, variety)
    drift_changelogs: bool = False  # a changelog's broken references fail `drift` too (they name old APIs by design)
    fill: bool = True  # false: the index stays at the first stage (static + lexical), no transformer vector is made
    fill_paths: tuple[str, ...] = ()  # globs: only these files get transformer vectors (none: every file)
    fill_exclude: tuple[str, ...] = ()  # globs: these files stay at the first stage
    history: bool = True  # the commits' messages and files, kept by every reindex as evidence for `locate`
    secret_patterns: tuple[str, ...] = ()  # regular expressions redacted besides the built-in detectors
    secret_files: tuple[str, ...] = DEFAULT_SECRET_FILES  # file-name globs never read
    store: str = "local"  # "local" (.knowledge/) or a postgresql:// URL of a shared database (no password in it)
    store_repository: str = ""  # the repository's name in a shared store; default: its root commit


# setting -> (environment variables, highest priority first)
ENV_VARS: dict[str, tuple[str, ...]] = {
    "model": ("KNOWLEDGE_MODEL",),
    "model_variant": ("KNOWLEDGE_MODEL_VARIANT",),
    "home": ("KNOWLEDGE_HOME",),
    "max_file_bytes": ("KNOWLEDGE_MAX_FILE_BYTES",),
    "snapshot_max_bytes": ("KNOWLEDGE_SNAPSHOT_MAX_BYTES",),
    "k": ("KNOWLEDGE_K",),
    "threshold": ("KNOWLEDGE_THRESHOLD", "SEARCH_SIMILARITY_THRESHOLD"),
    "full_threshold": ("KNOWLEDGE_FULL_THRESHOLD", "SEARCH_FULL_CONTEXT_SIMILARITY_THRESHOLD"),
    "budget": ("KNOWLEDGE_BUDGET", "SEARCH_CONTEXT_TOKEN_LIMIT"),
    "redact_secrets": ("KNOWLEDGE_REDACT_SECRETS",),
    "rank_rules": ("KNOWLEDGE_RANK_RULES",),
    "drift_changelogs": ("KNOWLEDGE_DRIFT_CHANGELOGS",),
    "fill": ("KNOWLEDGE_FILL",),
    "history": ("KNOWLEDGE_HISTORY",),
    "store": ("KNOWLEDGE_STORE",),
    "store_repository": ("KNOWLEDGE_STORE_REPOSITORY",),
}


def _coerce(name: str, value: Any, origin: str) -> Any:  # noqa: ANN401 - validated per field below
    def fail(problem: str) -> ConfigError:
        return ConfigError(f"{origin}: {name}: {problem}")

    try:
        if name in {"threshold", "full_threshold"}:
            number = float(value)
            if not -1.0 <= number <= 1.0:
                raise fail(f"{number} is not a cosine similarity in [-1, 1]")
            return number
        if name in {"k", "budget", "max_file_bytes", "snapshot_max_bytes"}:
            if isinstance(value, bool):
                raise fail("expected an integer")
            number = int(value)
            if number < 1:
                raise fail(f"{number} must be at least 1")
            return number
        if name in {"include", "exclude", "code_include", "code_exclude", "secret_files", "fill_paths", "fill_exclude"}:
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise fail("expected a list of glob strings")
            for pattern in value:
                try:
                    (name_glob if name == "secret_files" else glob)(pattern)
                except PatternError as exc:
                    raise fail(str(exc)) from None
            return tuple(value)
        if name == "secret_patterns":
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise fail("expected a list of regular expressions")
            for pattern in value:
                try:
                    user_regex(pattern)
                except PatternError as exc:
                    raise fail(str(exc)) from None
            return tuple(value)
        if name in {"redact_secrets", "rank_rules", "drift_changelogs", "fill", "history"}:
            if isinstance(value, bool):
                return value
            if str(value).lower() in {"1", "true", "yes", "on"}:
                return True
            if str(value).lower() in {"0", "false", "no", "off"}:
                return False
            raise fail(f"{value!r} is not true or false")
        if name == "home":
            return Path(str(value)).expanduser()
        if name == "model_variant":
            if value not in MODEL_VARIANTS:
                raise fail(f"{value!r} is not one of {', '.join(MODEL_VARIANTS)}")
            return str(value)
        if name == "model":
            return str(value)
        if name == "store_repository":
            return str(value)
        if name == "store":
            return _store_url(str(value), origin, fail)
    except (TypeError, ValueError) as exc:
        raise fail(f"invalid value {value!r}") from exc
    raise fail("unknown setting")


def _store_url(value: str, origin: str, fail: Any) -> str:  # noqa: ANN401 - fail: the caller's error factory
    if value in {"", "local"}:
        return "local"
    if not value.startswith(("postgresql://", "postgres://")):
        raise fail(f"{value!r} is neither local nor a postgresql:// URL")
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(value)
    in_query = any(_secret_parameter(key) for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    if (parts.password is not None or in_query) and not origin.startswith("environment"):
        raise fail("a password does not belong in a file or on a command line: use PGPASSWORD or ~/.pgpass")
    return value


def _secret_parameter(key: str) -> bool:
    """A connection parameter that holds a secret: libpq's `password` and `sslpassword` (a client key's passphrase),
    and any other `…password`."""
    return key.lower().endswith("password")


def _read_file(root: Path) -> dict[str, Any]:
    path = root / CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    known = {f.name for f in fields(Settings)} - {"home"}
    for key in data:
        if key not in known:
            raise ConfigError(f"{path}: unknown setting {key!r} (known: {', '.join(sorted(known))})")
    return {key: _coerce(key, value, str(path)) for key, value in data.items()}


def load_settings(
    root: Path, overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Settings, dict[str, str]]:
    """Resolve settings for the repository at `root`; returns them with the source of each one. What a tracked file
    alone may not decide (a shared store, lowered secret protection) is refused until the user trusts it."""
    settings, sources = _resolve(root, overrides, environ)
    _check_consent(root, settings, sources)
    return settings, sources


def _resolve(
    root: Path, overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Settings, dict[str, str]]:
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {"home": user_cache_dir()}
    sources: dict[str, str] = {f.name: "default" for f in fields(Settings)}
    for key, value in _read_file(root).items():
        if key == "code_exclude":  # adds to the generated/vendored defaults rather than replacing them
            value = DEFAULT_CODE_EXCLUDE + tuple(value)
        values[key], sources[key] = value, CONFIG_FILE
    for key, names in ENV_VARS.items():
        for name in reversed(names):  # the first name wins, so apply it last
            if env.get(name, "") != "":
                values[key], sources[key] = _coerce(key, env[name], f"environment variable {name}"), name
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key], sources[key] = _coerce(key, value, f"option --{key.replace('_', '-')}"), "option"
    return replace(Settings(), **values), sources


def _file_chose_store(settings: Settings, sources: Mapping[str, str]) -> bool:
    return CONFIG_FILE in (sources["store"], sources["store_repository"]) and settings.store != "local"


def _check_consent(root: Path, settings: Settings, sources: Mapping[str, str]) -> None:
    chosen = _store_choice(settings)
    if _file_chose_store(settings, sources) and trusted_store(root) != chosen:
        raise ConfigError(
            f"{root / CONFIG_FILE}: store = {redact_url(settings.store)!r}"
            + (f", store_repository = {settings.store_repository!r}" if settings.store_repository else "")
            + " would send this repository's text to that database (and index), and a file in the repository cannot "
            "decide that alone: run `knowledge teams trust` once in this clone to allow it, or set KNOWLEDGE_STORE"
        )
    lowered = lowered_protections(settings, sources)
    if lowered and trusted_entry(root).get("protections") != lowered:
        raise ConfigError(
            f"{root / CONFIG_FILE}: {lowered} would serve secrets that knowledge keeps out by default, and a file in "
            "the repository cannot decide that alone: run `knowledge teams trust` once in this clone to allow it, "
            "or remove the setting"
        )


def lowered_protections(settings: Settings, sources: Mapping[str, str]) -> str:
    """What the repository's knowledge.toml turns off of the secret protections (redaction, the secret file names),
    in words; empty when nothing. The user's own environment and options are theirs to set; a tracked file needs
    the user's consent (`teams trust`), as a store does."""
    lowered = []
    if sources.get("redact_secrets") == CONFIG_FILE and not settings.redact_secrets:
        lowered.append("redact_secrets = false")
    if sources.get("secret_files") == CONFIG_FILE:
        dropped = [name for name in DEFAULT_SECRET_FILES if name not in settings.secret_files]
        if dropped:
            lowered.append(f"secret_files without {', '.join(dropped)}")
    return "; ".join(lowered)


def _store_choice(settings: Settings) -> str:
    """What `teams trust` allows: the store and the repository name in it, together."""
    return settings.store + (f"#repository={settings.store_repository}" if settings.store_repository else "")


def redact_url(url: str) -> str:
    """`url` without a password, in its user part or its query, for messages."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    if len(netloc) == 2 and ":" in netloc[0]:
        netloc[0] = netloc[0].split(":", 1)[0]
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _secret_parameter(k)]
    return urlunsplit((parts.scheme, "@".join(netloc), parts.path, urlencode(query), parts.fragment))


def trust_store(root: Path) -> str:
    """Allow what `root`'s knowledge.toml decides that a tracked file alone may not: the shared store it names and
    the secret protections it lowers (user-level, this clone only, until the file says something else); returns
    what was allowed, in words."""
    settings, sources = _resolve(root)
    entry: dict[str, str] = {}
    allowed = []
    if _file_chose_store(settings, sources):  # the store or the repository's name in it (the store may be the env's)
        entry["store"] = _store_choice(settings)
        allowed.append(f"indexes into {redact_url(settings.store)}")
    lowered = lowered_protections(settings, sources)
    if lowered:
        entry["protections"] = lowered
        allowed.append(f"may set {lowered}")
    if not entry:
        raise ConfigError(
            f"{root / CONFIG_FILE}: names no shared store and lowers no protection: nothing to trust "
            "(a store chosen by KNOWLEDGE_STORE needs no trust)"
        )
    record_trust(root, entry)
    return "; ".join(allowed)
