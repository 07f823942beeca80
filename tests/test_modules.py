"""What a file is called as a module (`knowledge/modules.py`), and which paths are not the project's working code
(`knowledge/quiet.py`): the names `locate` reads an issue's words and a test's subject by."""

import pytest

from knowledge import modules
from knowledge.modules import module_name, project_words
from knowledge.quiet import is_quiet


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("src/plugin/utc/index.js", "utc"),
        ("src/exec/mod.rs", "exec"),
        ("sympy/printing/__init__.py", "__init__"),  # re-exports its folder: the code is in the modules it names
        ("index.js", "index"),  # a repository's own entry: no folder names it
        ("sympy/printing/latex.py", "latex"),
        ("src/main/java/org/Foo.java", "Foo"),
    ],
)
def test_a_folders_module_is_named_by_its_folder(path, name):
    assert module_name(path) == name


CODE = [
    "src/plugin/utc/index.js",
    "index.js",
    "lib/router/index.js",
    "sympy/printing/latex.py",
    "include/fmt/format.h",
    "src/main/java/org/json/JsonParser.java",
    "src/bytes.rs",
    "pkg/parse.go",
]


@pytest.mark.parametrize(
    ("test", "subject"),
    [
        ("sympy/printing/tests/test_latex.py", "sympy/printing/latex.py"),
        ("pkg/parse_test.go", "pkg/parse.go"),
        ("test/plugin/utc/index.js", "src/plugin/utc/index.js"),
    ],
)
def test_a_test_named_for_its_subject_passes_it_its_votes(test, subject):
    assert modules.test_subjects([test], CODE) == {test: subject}


@pytest.mark.parametrize("test", ["test/format-test.cc", "src/test/java/org/json/JsonParserTest.java"])
def test_other_languages_test_names_name_no_subject(test):
    """Read and not kept: fmt's `format-test.cc` would pass its votes to `format.h`, the header every fix passes
    through (mswe-dev fmt files Acc@1 0.585 -> 0.463)."""
    assert modules.test_subjects([test], CODE) == {}


def test_only_a_test_has_a_subject():
    """`examples/auth/index.js` is the `auth` example, `benches/bytes.rs` measures the crate, the amalgamated
    `single_include/catch2/catch.hpp` is built of every header: none is written for the code file of its name."""
    quiet = ["examples/auth/index.js", "examples/index.js", "test/index.js", "benches/bytes.rs", "single_include/x.hpp"]
    assert modules.test_subjects(quiet, [*CODE, "include/x.hpp"]) == {}


def test_a_folder_holding_most_files_names_the_project():
    paths = [f"gson/src/main/java/com/google/gson/{name}.java" for name in ("Gson", "JsonParser", "Streams")]
    paths += ["README.md", "docs/UserGuide.md"]
    assert project_words(paths) == {"gson", "src", "main", "java", "com", "google"}
    assert project_words([]) == frozenset()


@pytest.mark.parametrize(
    "path",
    [
        "benches/bytes.rs",
        "single_include/catch2/catch.hpp",
        "extras/catch_amalgamated.cpp",
        "src/sqlite3_amalgamation.c",
    ],
)
def test_benches_and_a_projects_one_file_build_of_itself_are_not_its_working_code(path):
    assert is_quiet(path)


@pytest.mark.parametrize("path", ["src/bench.rs", "include/catch2/catch_test_macros.hpp", "src/bytes.rs"])
def test_working_code_stays_loud(path):
    assert not is_quiet(path)
