"""The project's own promises: README commands equal .ci/run, every doc has a description, commands have help."""

import re
from pathlib import Path

import frontmatter
from click.testing import CliRunner

from knowledge.cli import cli

ROOT = Path(__file__).parent.parent


def readme_commands():
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text(), flags=re.S)[:2]


def test_ci_runs_exactly_the_readme_commands():
    install, test = readme_commands()
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert install in lines
    assert test in lines
    assert "knowledge reindex-all" in install
    assert "knowledge search" in install


def test_every_doc_page_has_a_description():
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert str(frontmatter.load(page).get("description", "")).strip(), page


def walk(group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if hasattr(command, "commands"):
            yield from walk(command, (*prefix, name))


def test_every_command_has_help_and_is_documented():
    usage = (ROOT / "docs" / "usage.md").read_text()
    for path, command in walk(cli):
        assert command.help, path
        assert f"knowledge {' '.join(path)}" in usage, path
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0


def test_the_package_type_checks():
    """mypy over the package (settings in pyproject.toml): CI runs it with the tests, pre-commit before a commit."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=Path(__file__).parent.parent, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:]


def test_no_module_is_over_400_lines():
    """Small modules with one job each: past 400 lines a module has more than one (split it, docs/architecture.md)."""
    long = {
        str(path.relative_to(ROOT)): n
        for path in sorted((ROOT / "knowledge").rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > 400
    }
    assert long == {}


def test_every_language_of_the_chunker_is_indexed_by_default():
    from knowledge.chunking.languages import LANGUAGES
    from knowledge.config import DEFAULT_CODE_INCLUDE

    indexed = {pattern.rsplit("*", 1)[-1] for pattern in DEFAULT_CODE_INCLUDE}
    assert sorted(suffix for suffix in LANGUAGES if suffix not in indexed) == []
