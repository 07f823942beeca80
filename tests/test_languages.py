"""The eleven languages added to the ten: each grammar wheel loads, and a small real file gives its entities with
kind, parent, exact lines and calls; a syntax error falls back to line chunks around it, reported once."""

from pathlib import Path

import pytest

from knowledge.chunking.code import chunk_code
from knowledge.chunking.languages import LANGUAGES
from knowledge.records import SourceFile

FIXTURES = Path(__file__).parent / "fixtures" / "languages"

# file -> {(kind, parent, symbol, first line): calls that must be found}
EXPECTED = {
    "a.rb": {
        ("module", "", "Billing", 1): set(),
        ("class", "Billing", "Invoice", 2): set(),
        ("method", "Invoice", "total", 3): {"price", ".sum"},
        ("method", "Invoice", "build", 6): set(),
        ("function", "", "helper", 11): {".build"},
    },
    "a.php": {
        ("interface", "", "Payable", 3): set(),
        ("trait", "", "Loggable", 4): set(),
        ("method", "Invoice", "pay", 6): {"charge", "helper"},
        ("function", "", "helper", 8): {"Invoice"},
    },
    "a.cs": {
        ("interface", "", "IPayable", 2): set(),
        ("struct", "", "Money", 3): set(),
        ("enum", "", "Kind", 5): set(),
        ("constructor", "Invoice", "Invoice", 7): set(),
        ("method", "Invoice", "Pay", 8): {"Charge", ".Run"},
    },
    "a.kt": {
        ("object", "", "Registry", 7): set(),
        ("method", "Invoice", "pay", 12): {"charge", ".run"},
        ("method", "Invoice", "build", 17): {"Invoice"},
        ("function", "", "helper", 21): set(),
    },
    "a.swift": {
        ("protocol", "", "Payable", 1): set(),
        ("constructor", "Invoice", "init", 5): set(),
        ("method", "Invoice", "pay", 6): {"charge", "helper"},
        ("function", "", "helper", 9): set(),
    },
    "a.scala": {
        ("trait", "", "Payable", 2): set(),
        ("object", "", "Registry", 3): set(),
        ("method", "Invoice", "pay", 6): {"charge", "helper"},
        ("function", "", "helper", 8): set(),
    },
    "a.sh": {("function", "", "deploy", 2): {"build_image", "push"}, ("function", "", "rollback", 6): set()},
    "a.lua": {
        ("method", "M", "pay", 2): {"charge"},
        ("method", "M", "total", 3): set(),
        ("function", "", "global_fn", 5): {"helper"},
    },
    "a.hs": {
        ("type", "", "Money", 2): set(),
        ("class", "", "Payable", 3): set(),
        ("function", "", "total", 7): {"map", "sum"},
    },
    "a.ex": {
        ("module", "", "Billing.Invoice", 1): set(),
        ("method", "Billing.Invoice", "pay", 2): {"charge"},
        ("method", "Billing.Invoice", "charge", 3): {".run"},
        ("protocol", "", "Payable", 8): set(),
    },
    "a.zig": {
        ("struct", "", "Invoice", 2): set(),
        ("method", "Invoice", "pay", 4): {"charge"},
        ("test", "", "pay", 8): {"helper"},
    },
}


def chunks_of(name: str, text: str | None = None):
    text = (FIXTURES / name).read_text() if text is None else text
    return chunk_code(SourceFile(path=name, kind="code", text=text, content_hash="h"), 256, lambda t: len(t.split()))


def test_the_docs_list_exactly_the_languages_the_chunker_knows():
    """usage.md names every language (a list compared, not a count asserted); the README's count follows it."""
    import re

    root = Path(__file__).parent.parent
    usage = " ".join((root / "docs" / "usage.md").read_text().split())
    listed = re.search(r"via tree-sitter for (.+?); the lines between entities", usage).group(1)
    written = {name.strip() for part in listed.split(",") for name in part.split(" and ")}
    spelled = {"C++": "cpp", "C#": "csharp"}
    known = {spec.name for spec in LANGUAGES.values()}
    assert {spelled.get(name, name.lower()) for name in written} == known
    readme = " ".join((root / "README.md").read_text().split())
    assert f"tree-sitter, {len(known)} languages" in readme


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_entities_names_parents_lines_and_calls(name):
    parsed = chunks_of(name)
    assert parsed.problems == []
    found = {(c.symbol_kind, c.parent, c.symbol, c.line_start): set(c.calls) for c in parsed.chunks if c.symbol}
    for entity, calls in EXPECTED[name].items():
        assert entity in found, f"{name}: {entity} not among {sorted(found)}"
        assert calls <= found[entity], f"{name}: {entity} calls {found[entity]}, expected {calls}"
    language = LANGUAGES["." + name.split(".")[1]].name
    assert {c.language for c in parsed.chunks} == {language}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_syntax_error_falls_back_to_line_chunks_reported_once(name):
    broken = (FIXTURES / name).read_text() + '\n(((( {{{{ [[[[ "unterminated\n'
    parsed = chunks_of(name, broken)
    assert len(parsed.problems) == 1
    assert "syntax error near line" in parsed.problems[0].problem
    garbage = broken.count("\n")  # its line number
    assert [c.symbol for c in parsed.chunks if c.line_start <= garbage <= c.line_end] == [""]
    lines = broken.split("\n")
    held = {n for c in parsed.chunks for n in range(c.line_start, c.line_end + 1)}
    assert all(n + 1 in held for n, text in enumerate(lines) if any(ch.isalnum() for ch in text))  # nothing lost


@pytest.mark.parametrize(
    ("name", "text", "symbol", "first"),
    [
        ("a.hs", "module A where\ntotal :: [Int] -> Int\ntotal xs = sum xs\n", "total", 2),
        (
            "a.rs",
            "use std::fmt;\n\n/// Adds one.\n#[inline]\n#[must_use]\npub fn add_one(x: i32) -> i32 {\n    x + 1\n}\n",
            "add_one",
            3,
        ),
        (
            "A.java",
            "class A {\n    /** Pays. */\n    @Override\n    public int pay(int x) {\n        return x;\n    }\n}\n",
            "pay",
            2,
        ),
        (
            "a.kt",
            'class A {\n  /** Pays. */\n  @Deprecated("x")\n  fun pay(x: Int): Int {\n    return x\n  }\n}\n',
            "pay",
            2,
        ),
        (
            "a.scala",
            'class A {\n  /** Pays. */\n  @deprecated("x", "1")\n  def pay(x: Int): Int = {\n    x\n  }\n}\n',
            "pay",
            2,
        ),
        (
            "a.cs",
            "class A {\n  /// <summary>Pays.</summary>\n  [Obsolete]\n  int Pay(int x) {\n    return x;\n  }\n}\n",
            "Pay",
            2,
        ),
        (
            "a.ex",
            'defmodule A do\n  @doc "Pays."\n  @spec pay(integer) :: integer\n  def pay(x) do\n    x\n  end\nend\n',
            "pay",
            2,
        ),
        ("a.py", "import os\n\n\n@functools.cache\n@other\ndef pay(x):\n    return x\n", "pay", 4),
        (
            "a.ts",
            "class A {\n  /** Pays. */\n  @Input()\n  pay(x: number): number {\n    return x;\n  }\n}\n",
            "pay",
            2,
        ),
        (
            "a.swift",
            "class A {\n  /// Pays.\n  @discardableResult\n  func pay(x: Int) -> Int {\n    return x\n  }\n}\n",
            "pay",
            2,
        ),
        (
            "a.go",
            "package a\n\n// Pay pays.\nfunc Pay(x int) int {\n\treturn x\n}\n",
            "Pay",
            4,
        ),  # Go's `//` stays apart
    ],
)
def test_an_entity_starts_where_its_declaration_starts(name, text, symbol, first):
    """Signatures, attributes, annotations, decorators and doc comments open the entity's range."""
    starts = {c.symbol: c.line_start for c in chunks_of(name, text).chunks if c.symbol}
    assert starts[symbol] == first
