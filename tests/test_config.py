import time

import pytest

from knowledge.config import load_settings
from knowledge.errors import ConfigError
from knowledge.globs import glob_to_regex
from knowledge.secrets import SecretRedactor


def test_precedence_option_then_knowledge_env_then_seed_env_then_file(tmp_path):
    (tmp_path / "knowledge.toml").write_text("threshold = 0.1\nbudget = 100\nk = 3\n")
    env = {"SEARCH_SIMILARITY_THRESHOLD": "0.2", "SEARCH_CONTEXT_TOKEN_LIMIT": "200"}
    settings, sources = load_settings(tmp_path, {}, env)
    assert (settings.threshold, settings.budget, settings.k) == (0.2, 200, 3)
    assert sources["threshold"] == "SEARCH_SIMILARITY_THRESHOLD"
    assert sources["k"] == "knowledge.toml"
    env["KNOWLEDGE_THRESHOLD"] = "0.3"
    settings, sources = load_settings(tmp_path, {}, env)
    assert settings.threshold == 0.3
    assert sources["threshold"] == "KNOWLEDGE_THRESHOLD"
    settings, sources = load_settings(tmp_path, {"threshold": 0.4}, env)
    assert settings.threshold == 0.4
    assert sources["threshold"] == "option"


def test_unknown_key_names_the_file_and_key(tmp_path):
    (tmp_path / "knowledge.toml").write_text("treshold = 0.1\n")
    with pytest.raises(ConfigError, match=r"knowledge\.toml: unknown setting 'treshold'"):
        load_settings(tmp_path, {}, {})


def test_bad_env_value_is_named(tmp_path):
    with pytest.raises(ConfigError, match="SEARCH_CONTEXT_TOKEN_LIMIT: budget: invalid value 'lots'"):
        load_settings(tmp_path, {}, {"SEARCH_CONTEXT_TOKEN_LIMIT": "lots"})


def test_code_exclude_adds_to_the_generated_and_vendored_defaults(tmp_path):
    (tmp_path / "knowledge.toml").write_text('code_exclude = ["legacy/**"]\n')
    settings, _ = load_settings(tmp_path, {}, {})
    assert "legacy/**" in settings.code_exclude
    assert "**/node_modules/**" in settings.code_exclude


def test_model_variant_is_one_of_the_built_kinds(tmp_path):
    (tmp_path / "knowledge.toml").write_text('model_variant = "int8-dynamic"\n')
    settings, _ = load_settings(tmp_path, {}, {})
    assert settings.model_variant == "int8-dynamic"
    (tmp_path / "knowledge.toml").write_text('model_variant = "int4"\n')
    with pytest.raises(ConfigError, match=r"knowledge\.toml: .*'int4' is not one of fp32, int8, int8-dynamic"):
        load_settings(tmp_path, {}, {})


def test_variant_default_follows_an_existing_index_then_the_model(tmp_path):
    import json
    from dataclasses import asdict, replace

    from knowledge.config import Settings
    from knowledge.model_access import default_variant
    from knowledge.store import FORMAT_VERSION, Manifest

    mpnet, minilm = Settings(model="all-mpnet-base-v2"), Settings(model="all-MiniLM-L6-v2")
    assert default_variant(tmp_path, mpnet) == "int8"
    assert default_variant(tmp_path, minilm) == "fp32"
    (tmp_path / ".knowledge").mkdir()
    built = Manifest(FORMAT_VERSION, "0", "all-mpnet-base-v2", "fp32", 768, "cos", 1, "f-c1", 0.3, 0.5, "now")
    (tmp_path / ".knowledge" / "code.meta.json").write_text(json.dumps({"manifest": asdict(built)}))
    assert default_variant(tmp_path, mpnet) == "fp32"  # an upgrade keeps the index it finds
    assert default_variant(tmp_path, minilm) == "fp32"
    future = {**asdict(replace(built, model_variant="int8-dynamic")), "a_field_of_later_versions": 1}
    (tmp_path / ".knowledge" / "code.meta.json").write_text(json.dumps({"manifest": future}))
    assert default_variant(tmp_path, mpnet) == "int8"  # a record this version cannot read says nothing


@pytest.mark.parametrize("pattern", ["(a+)+$", r"(\w*)*x", "(a|a)+b", r"(?:x+y?)+z", r"\d*\d*\d*\d*\d*\d*\d*\d*x"])
def test_a_secret_pattern_that_backtracks_forever_in_python_runs_in_linear_time(tmp_path, pattern):
    (tmp_path / "knowledge.toml").write_text(f"secret_patterns = [{pattern!r}]\n".replace("'", "'''"))
    settings, _ = load_settings(tmp_path)
    started = time.monotonic()
    SecretRedactor(settings.secret_patterns).redact("1" * 5000 + "a" * 5000 + "xy" * 2000)
    assert time.monotonic() - started < 2


def test_ordinary_secret_patterns_and_globs_are_accepted(tmp_path):
    (tmp_path / "knowledge.toml").write_text(
        "secret_patterns = ['''api[_-]?key\\s*=\\s*\\S+''', '''AKIA[0-9A-Z]{16}''']\nexclude = [\"**/gen/**\"]\n"
    )
    settings, _ = load_settings(tmp_path)
    assert len(settings.secret_patterns) == 2
    (tmp_path / "knowledge.toml").write_text('exclude = ["docs/*?*?*?*?*?*?*?*?Z"]\n')  # linear: accepted
    settings, _ = load_settings(tmp_path)
    started = time.monotonic()
    assert not glob_to_regex(settings.exclude[0]).fullmatch("docs/" + "a" * 20_000)
    assert time.monotonic() - started < 1
    (tmp_path / "knowledge.toml").write_text('exclude = ["' + "*" * 201 + '"]\n')
    with pytest.raises(ConfigError, match="at most 200"):
        load_settings(tmp_path)


def test_the_trust_the_error_asks_for_is_granted_when_the_store_comes_from_the_environment(tmp_path, monkeypatch):
    """569400d: a tracked `store_repository` with the store from KNOWLEDGE_STORE told the user to run `teams trust`,
    which then refused (the file names no store)."""
    from knowledge.config import trust_store

    (tmp_path / "knowledge.toml").write_text('store_repository = "team/widgets"\n')
    monkeypatch.setenv("KNOWLEDGE_STORE", "postgresql://me@db/knowledge")
    with pytest.raises(ConfigError, match="knowledge teams trust"):
        load_settings(tmp_path)
    assert "indexes into postgresql://me@db/knowledge" in trust_store(tmp_path)
    settings, _ = load_settings(tmp_path)
    assert settings.store_repository == "team/widgets"
