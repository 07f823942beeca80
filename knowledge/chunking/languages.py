"""The languages the code chunker knows: per file suffix, the tree-sitter grammar, which node types are entities and
calls, what "exported" means, and the one hook for a language's oddities. Mostly a data table."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from .tree import Node, Parser, has_child, node_text, parser_for


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    module: str  # the tree-sitter grammar package
    function: str  # its function returning the language pointer
    entities: dict[str, str]  # node type -> kind ("function", "class", ...)
    calls: tuple[str, ...]  # call node types
    exported: Callable[[Node, str, bytes], bool | None] = lambda node, name, src: None
    # The one hook for a language's oddities: (kind, name) for a node the `entities` table cannot describe
    # (Elixir's `def` is a call, Zig's `const Name = struct {…}` an anonymous struct), else None.
    entity: Callable[[Node, bytes], tuple[str, str] | None] | None = None
    # C and C++: an unknown macro (`FMT_CONSTEXPR auto f()`) is a parse error outside the body that breaks nothing.
    macros: bool = False
    # Node types declaring a constant, variable or type alias; outside functions their names are recorded on the
    # chunk that holds them (Flask's `g = LocalProxy(…)`), so that a query naming one finds where it is declared.
    names: tuple[str, ...] = ()


def _js_exported(node: Node, name: str, src: bytes) -> bool:
    return node.parent is not None and node.parent.type == "export_statement"


JS_ENTITIES = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
    "arrow_function": "function",
    "function_expression": "function",
}
TS_ENTITIES = {
    **JS_ENTITIES,
    "interface_declaration": "interface",
    "abstract_class_declaration": "class",
    "enum_declaration": "enum",
    "type_alias_declaration": "type",
}
C_ENTITIES = {"function_definition": "function", "struct_specifier": "struct"}
_ELIXIR_DEFINITIONS = {
    "def": "function",
    "defp": "function",
    "defmacro": "macro",
    "defmacrop": "macro",
    "defguard": "function",
    "defmodule": "module",
    "defprotocol": "protocol",
    "defimpl": "impl",
}


def _elixir_entity(node: Node, src: bytes) -> tuple[str, str] | None:
    # `def name(args) do … end` is a call of `def` whose first argument is the head `name(args)`.
    target = node.child_by_field_name("target") if node.type == "call" else None
    kind = _ELIXIR_DEFINITIONS.get(node_text(target, src)) if target is not None else None
    arguments = next((c for c in node.children if c.type == "arguments"), None)
    head = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    if kind is None or head is None:
        return None
    if head.type == "binary_operator":  # def name(x) when guard
        head = head.child_by_field_name("left") or head
    if head.type == "call":
        head = head.child_by_field_name("target") or head
    return kind, node_text(head, src)


def _zig_entity(node: Node, src: bytes) -> tuple[str, str] | None:
    # `const Name = struct { … };` names an otherwise anonymous container; `test "name" { … }` is a test.
    if node.type == "test_declaration":
        label = next((c for c in node.children if c.type in {"string", "identifier"}), None)
        return ("test", node_text(label, src).strip('"')) if label is not None else None
    if node.type != "variable_declaration":
        return None
    kinds = {"struct_declaration": "struct", "enum_declaration": "enum", "union_declaration": "union"}
    value = next((kinds[c.type] for c in node.children if c.type in kinds), None)
    name = next((c for c in node.children if c.type == "identifier"), None)
    return (value, node_text(name, src)) if value is not None and name is not None else None


LANGUAGES: dict[str, LanguageSpec] = {
    ".py": LanguageSpec(
        "python",
        "tree_sitter_python",
        "language",
        {"function_definition": "function", "class_definition": "class"},
        ("call",),
        lambda node, name, src: not name.startswith("_"),
        names=("assignment",),
    ),
    ".ts": LanguageSpec(
        "typescript",
        "tree_sitter_typescript",
        "language_typescript",
        TS_ENTITIES,
        ("call_expression", "new_expression"),
        _js_exported,
        names=("variable_declarator",),
    ),
    ".tsx": LanguageSpec(
        "tsx",
        "tree_sitter_typescript",
        "language_tsx",
        TS_ENTITIES,
        ("call_expression", "new_expression"),
        _js_exported,
        names=("variable_declarator",),
    ),
    ".go": LanguageSpec(
        "go",
        "tree_sitter_go",
        "language",
        {"function_declaration": "function", "method_declaration": "method", "type_spec": "type"},
        ("call_expression",),
        lambda node, name, src: name[:1].isupper(),
        names=("const_spec", "var_spec"),
    ),
    ".rs": LanguageSpec(
        "rust",
        "tree_sitter_rust",
        "language",
        {
            "function_item": "function",
            "struct_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "impl_item": "impl",
            "function_signature_item": "function",
            "type_item": "type",
            "union_item": "union",
            "macro_definition": "macro",
        },
        ("call_expression", "macro_invocation"),
        lambda node, name, src: has_child(node, {"visibility_modifier"}),
        names=("const_item", "static_item"),
    ),
    ".java": LanguageSpec(
        "java",
        "tree_sitter_java",
        "language",
        {
            "class_declaration": "class",
            "interface_declaration": "interface",
            "enum_declaration": "enum",
            "method_declaration": "method",
            "constructor_declaration": "constructor",
            "record_declaration": "class",
        },
        ("method_invocation", "object_creation_expression"),
        lambda node, name, src: has_child(node, {"modifiers"}, b"public", src),
        names=("variable_declarator",),
    ),
}
LANGUAGES.update(
    {
        ".rb": LanguageSpec(
            "ruby",
            "tree_sitter_ruby",
            "language",
            {"class": "class", "module": "module", "method": "function", "singleton_method": "method"},
            ("call",),
        ),
        ".php": LanguageSpec(
            "php",
            "tree_sitter_php",
            "language_php",
            {
                "function_definition": "function",
                "method_declaration": "method",
                "class_declaration": "class",
                "interface_declaration": "interface",
                "trait_declaration": "trait",
                "enum_declaration": "enum",
            },
            (
                "function_call_expression",
                "member_call_expression",
                "scoped_call_expression",
                "object_creation_expression",
            ),
        ),
        ".cs": LanguageSpec(
            "csharp",
            "tree_sitter_c_sharp",
            "language",
            {
                "class_declaration": "class",
                "interface_declaration": "interface",
                "struct_declaration": "struct",
                "record_declaration": "class",
                "enum_declaration": "enum",
                "method_declaration": "method",
                "constructor_declaration": "constructor",
            },
            ("invocation_expression", "object_creation_expression"),
            lambda node, name, src: has_child(node, {"modifier"}, b"public", src),
        ),
        ".kt": LanguageSpec(
            "kotlin",
            "tree_sitter_kotlin",
            "language",
            {"class_declaration": "class", "object_declaration": "object", "function_declaration": "function"},
            ("call_expression",),
        ),
        ".swift": LanguageSpec(
            "swift",
            "tree_sitter_swift",
            "language",
            {
                "class_declaration": "class",  # class, struct, enum and extension alike
                "protocol_declaration": "protocol",
                "function_declaration": "function",
                "protocol_function_declaration": "function",
                "init_declaration": "constructor",
            },
            ("call_expression",),
        ),
        ".scala": LanguageSpec(
            "scala",
            "tree_sitter_scala",
            "language",
            {
                "class_definition": "class",
                "object_definition": "object",
                "trait_definition": "trait",
                "enum_definition": "enum",
                "function_definition": "function",
                "function_declaration": "function",
            },
            ("call_expression",),
        ),
        ".sh": LanguageSpec("bash", "tree_sitter_bash", "language", {"function_definition": "function"}, ("command",)),
        ".lua": LanguageSpec(
            "lua", "tree_sitter_lua", "language", {"function_declaration": "function"}, ("function_call",)
        ),
        ".hs": LanguageSpec(
            "haskell",
            "tree_sitter_haskell",
            "language",
            {
                "function": "function",
                "data_type": "type",
                "newtype": "type",
                "type_synomym": "type",
                "class": "class",
                "instance": "impl",
            },
            ("apply",),
        ),
        ".ex": LanguageSpec("elixir", "tree_sitter_elixir", "language", {}, ("call",), entity=_elixir_entity),
        ".zig": LanguageSpec(
            "zig",
            "tree_sitter_zig",
            "language",
            {"function_declaration": "function"},
            ("call_expression", "builtin_function"),
            lambda node, name, src: has_child(node, {"pub"}),
            entity=_zig_entity,
        ),
    }
)
for _ext, _same in ((".bash", ".sh"), (".kts", ".kt"), (".exs", ".ex"), (".sc", ".scala")):
    LANGUAGES[_ext] = LANGUAGES[_same]
_JS_CALLS = ("call_expression", "new_expression")
_JS_NAMES = ("variable_declarator",)
for _ext, _js_language in ((".js", "javascript"), (".mjs", "javascript"), (".cjs", "javascript"), (".jsx", "jsx")):
    LANGUAGES[_ext] = LanguageSpec(
        _js_language, "tree_sitter_javascript", "language", JS_ENTITIES, _JS_CALLS, _js_exported, names=_JS_NAMES
    )


_C_NAMES = ("init_declarator", "preproc_def", "type_definition")


def _c_exported(node: Node, name: str, src: bytes) -> bool:
    return not has_child(node, {"storage_class_specifier"}, b"static", src)


for _ext in (".c", ".h"):
    LANGUAGES[_ext] = LanguageSpec(
        "c", "tree_sitter_c", "language", C_ENTITIES, ("call_expression",), _c_exported, macros=True, names=_C_NAMES
    )
for _ext in (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"):
    LANGUAGES[_ext] = LanguageSpec(
        "cpp",
        "tree_sitter_cpp",
        "language",
        {**C_ENTITIES, "class_specifier": "class"},
        ("call_expression",),
        _c_exported,
        macros=True,
        names=_C_NAMES,
    )


# A `.h` header is C++ as often as C (fmtlib, most C++ libraries); read as C, a C++ header is one long syntax error.
_CPP_HEADER = re.compile(
    r"^\s*(namespace\s+[\w:]+\s*\{|template\s*<|(class|struct)\s+\w+\s*(final\s*)?:\s*(public|private|protected)\b"
    r"|(public|private|protected)\s*:|using\s+namespace\b)|\bstd::",
    re.MULTILINE,
)


def language_of(path: str, text: str = "") -> LanguageSpec | None:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix == ".h" and _CPP_HEADER.search(text):
        return LANGUAGES[".hpp"]
    return LANGUAGES.get(suffix)


# `class SPDLOG_API logger {`: an export macro between the keyword and the name reads, to tree-sitter, as the class's
# name, and the whole class as one broken function. Blanked (same length: every offset and line stays) before parsing.
_EXPORT_MACRO = re.compile(
    rb"(\b(?:class|struct|union)\s+)([A-Z][A-Z0-9_]*[A-Z0-9])(?=\s+[A-Za-z_]\w*\s*(?:final\b|[:{]))"
)


def parse_bytes(spec: LanguageSpec, text: str) -> bytes:
    """What tree-sitter parses for `text`: its UTF-8 bytes, with C/C++ export macros in class heads blanked."""
    src = text.encode("utf-8")
    if spec.macros:
        src = _EXPORT_MACRO.sub(lambda m: m.group(1) + b" " * len(m.group(2)), src)
    return src


def parser(spec: LanguageSpec) -> Parser:
    return parser_for(spec.module, spec.function)
