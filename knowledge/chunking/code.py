"""Source code: one chunk per function, method and class (tree-sitter), line chunks for everything else.

The only module importing tree-sitter. Each entity keeps its name, kind, parent class, decorators, whether it is
exported, its exact 1-based line range and the names it calls. Entities over the token limit are split with their
name and parent kept; a class whose methods are chunks of their own is chunked as its header. Files in other
languages, and files that do not parse, fall back to line windows sized in model tokens.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..records import Chunk, FileProblem, SourceFile
from .ids import unique_chunk_id

CODE_CHUNKER_VERSION = 15  # 15: Python calls through typed receivers (`kb.m()`, `self.kb.m()`) resolved
OVERLAP_LINES = 2
# Measured on CoSQA through this chunker (bench/code_bench.py, MiniLM): nDCG@10 0.5819 with "N: " line prefixes in
# the embedded text, 0.5869 without. Line ranges stay in the metadata either way.
LINE_NUMBERS_IN_EMBEDDING = False


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    name: str
    module: str  # the tree-sitter grammar package
    function: str  # its function returning the language pointer
    entities: dict[str, str]  # node type -> kind ("function", "class", ...)
    calls: tuple[str, ...]  # call node types
    exported: Callable[[Any, str, bytes], bool | None] = lambda node, name, src: None
    # The one hook for a language's oddities: (kind, name) for a node the `entities` table cannot describe
    # (Elixir's `def` is a call, Zig's `const Name = struct {…}` an anonymous struct), else None.
    entity: Callable[[Any, bytes], tuple[str, str] | None] | None = None
    # C and C++: an unknown macro (`FMT_CONSTEXPR auto f()`) is a parse error outside the body that breaks nothing.
    macros: bool = False
    # Node types declaring a constant, variable or type alias; outside functions their names are recorded on the
    # chunk that holds them (Flask's `g = LocalProxy(…)`), so that a query naming one finds where it is declared.
    names: tuple[str, ...] = ()


def _has_child(node: Any, types: set[str], text: bytes | None = None, src: bytes = b"") -> bool:  # noqa: ANN401
    for child in node.children:
        if child.type in types and (text is None or text in src[child.start_byte : child.end_byte]):
            return True
    return False


def _js_exported(node: Any, name: str, src: bytes) -> bool:  # noqa: ANN401
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


def _elixir_entity(node: Any, src: bytes) -> tuple[str, str] | None:  # noqa: ANN401
    # `def name(args) do … end` is a call of `def` whose first argument is the head `name(args)`.
    target = node.child_by_field_name("target") if node.type == "call" else None
    kind = _ELIXIR_DEFINITIONS.get(_text(target, src)) if target is not None else None
    arguments = next((c for c in node.children if c.type == "arguments"), None)
    head = arguments.named_children[0] if arguments is not None and arguments.named_children else None
    if kind is None or head is None:
        return None
    if head.type == "binary_operator":  # def name(x) when guard
        head = head.child_by_field_name("left") or head
    if head.type == "call":
        head = head.child_by_field_name("target") or head
    return kind, _text(head, src)


def _zig_entity(node: Any, src: bytes) -> tuple[str, str] | None:  # noqa: ANN401
    # `const Name = struct { … };` names an otherwise anonymous container; `test "name" { … }` is a test.
    if node.type == "test_declaration":
        label = next((c for c in node.children if c.type in {"string", "identifier"}), None)
        return ("test", _text(label, src).strip('"')) if label is not None else None
    if node.type != "variable_declaration":
        return None
    kinds = {"struct_declaration": "struct", "enum_declaration": "enum", "union_declaration": "union"}
    value = next((kinds[c.type] for c in node.children if c.type in kinds), None)
    name = next((c for c in node.children if c.type == "identifier"), None)
    return (value, _text(name, src)) if value is not None and name is not None else None


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
        lambda node, name, src: _has_child(node, {"visibility_modifier"}),
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
        lambda node, name, src: _has_child(node, {"modifiers"}, b"public", src),
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
            lambda node, name, src: _has_child(node, {"modifier"}, b"public", src),
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
            lambda node, name, src: _has_child(node, {"pub"}),
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


def _c_exported(node: Any, name: str, src: bytes) -> bool:  # noqa: ANN401
    return not _has_child(node, {"storage_class_specifier"}, b"static", src)


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
CONTAINERS = {"class", "interface", "struct", "trait", "impl", "enum", "type", "module", "object", "protocol", "union"}
_PARSERS: dict[str, Any] = {}


@dataclass(slots=True)
class Entity:
    name: str
    kind: str
    parent: str
    start: int  # 0-based line
    end: int  # 0-based line, inclusive
    decorators: tuple[str, ...] = ()
    exported: bool | None = None
    calls: set[str] = field(default_factory=set)
    children: list[Entity] = field(default_factory=list)


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


def _parser(spec: LanguageSpec) -> Any:  # noqa: ANN401 - tree_sitter.Parser
    key = f"{spec.module}.{spec.function}"
    if key not in _PARSERS:
        import tree_sitter

        module = importlib.import_module(spec.module)
        _PARSERS[key] = tree_sitter.Parser(tree_sitter.Language(getattr(module, spec.function)()))
    return _PARSERS[key]


def _text(node: Any, src: bytes) -> str:  # noqa: ANN401
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


_TEMPLATE_ARGUMENTS = re.compile(r"<[^<>]*>")


def _without_template_arguments(name: str) -> str:
    """`formatter<std::atomic<T>, Char>` -> `formatter`, `parse_context<Char>::check` -> `parse_context::check`: a
    specialisation is found by the template's name (operators such as `operator<<` are left alone)."""
    if "<" not in name or "operator" in name:
        return name
    while True:
        shorter = _TEMPLATE_ARGUMENTS.sub("", name)
        if shorter == name:
            return " ".join(shorter.split())
        name = shorter


def _name(node: Any, src: bytes) -> str:  # noqa: ANN401
    return _without_template_arguments(_raw_name(node, src))


def _raw_name(node: Any, src: bytes) -> str:  # noqa: ANN401
    named = node.child_by_field_name("name")
    if named is not None:
        return _text(named, src)
    if node.type in {"arrow_function", "function_expression"} and node.parent is not None:
        holder = node.parent  # const name = () => …  /  name: function () …
        target = (  # or `obj.name = function () …`, named `obj.name`
            holder.child_by_field_name("name")
            or holder.child_by_field_name("key")
            or holder.child_by_field_name("left")
        )
        return _text(target, src) if target is not None and target.type != "subscript_expression" else ""
    if node.type == "impl_item":  # impl<S> Trait<S> for Query<T> -> Query
        kind = node.child_by_field_name("type")
        return _text(kind, src) if kind is not None else ""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:  # C/C++: int *f(int) -> f; A::b -> A::b
        if declarator.type in {
            "identifier",
            "field_identifier",
            "qualified_identifier",
            "destructor_name",
            "operator_name",
        }:
            return _text(declarator, src)
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _callee(node: Any, src: bytes) -> str:  # noqa: ANN401
    target = (
        node.child_by_field_name("function")
        or node.child_by_field_name("name")
        or node.child_by_field_name("method")
        or node.child_by_field_name("target")
        or node.child_by_field_name("macro")
        or node.child_by_field_name("constructor")
        or node.child_by_field_name("type")
    )
    if target is None and node.named_children:  # Kotlin, Swift, Zig: the callee is the first child
        target = node.named_children[0]
    while target is not None and target.type == node.type == "apply":  # Haskell `f a b` nests applications
        target = target.child_by_field_name("function")
    if target is None:
        return ""
    if node.type == "call" and node.child_by_field_name("receiver") is not None:
        return "." + _text(target, src)  # Ruby obj.m
    for field_name in ("property", "field", "attribute", "name"):  # obj.method() -> ".method"
        inner = target.child_by_field_name(field_name)
        if inner is not None and target.type not in {"identifier"}:
            return "." + _text(inner, src)
    if node.type == "method_invocation" and node.child_by_field_name("object") is not None:
        return "." + _text(target, src)  # Java obj.m()
    name = _text(target, src)
    return "." + name.split("::")[-1].split(".")[-1] if ("." in name or "::" in name) else name


def _walk(node: Any, spec: LanguageSpec, src: bytes, parent: Entity | None, out: list[Entity]) -> None:  # noqa: ANN401
    kind = spec.entities.get(node.type)
    hooked = spec.entity(node, src) if spec.entity is not None else None
    entity = None
    if hooked is not None:
        kind = hooked[0]
    if kind is not None:
        name = hooked[1] if hooked is not None else _name(node, src)
        anonymous_callback = node.type in {"arrow_function", "function_expression"} and not name
        # A function with a syntax error is left to line chunks (its extent may be wrong), unless the error is a C
        # macro outside a clean body. A class keeps its name and header: its clean members are entities of their
        # own, the broken ones line chunks.
        broken = node.has_error and kind not in CONTAINERS and not (spec.macros and _clean_body(node, name))
        if name and not anonymous_callback and not broken:
            if parent is not None and kind == "function" and parent.kind in CONTAINERS:
                kind = "method"
            if node.type == "method_declaration" and spec.name == "go":
                receiver = node.child_by_field_name("receiver")
                receiver_type = _text(receiver, src).strip("()").split()[-1].lstrip("*") if receiver is not None else ""
                parent_name = receiver_type
            else:
                parent_name = parent.name if parent is not None else ""
            qualified = next((sep for sep in ("::", ":", ".") if sep in name), None)
            if qualified and not parent_name and kind == "function":  # C++ A::m, Lua M.f and M:m
                parent_name, name = name.rsplit(qualified, 1)
                kind = "method"
            start_node = (
                node.parent
                if node.parent is not None and node.parent.type in {"decorated_definition", "export_statement"}
                else node
            )
            decorators = (
                tuple(_text(child, src) for child in start_node.children if child.type == "decorator")
                if start_node is not node
                else ()
            )
            if node.type in {"arrow_function", "function_expression"} and node.parent is not None:
                holder = node.parent.parent if node.parent.parent is not None else node.parent
                start_node = (
                    holder.parent if holder.parent is not None and holder.parent.type == "export_statement" else holder
                )
            entity = Entity(
                name=name,
                kind=kind,
                parent=parent_name,
                start=_leading_comments_start(start_node, src, name),
                end=node.end_point[0],
                decorators=decorators,
                exported=spec.exported(node, name, src),
            )
            (parent.children if parent is not None else out).append(entity)
    if node.type in spec.calls and hooked is None:
        owner = entity or parent
        callee = _callee(node, src)
        if owner is not None and callee:
            owner.calls.add(callee)
    for child in node.children:
        if hooked is not None and child.type == "arguments" and child.named_children:
            # Elixir's `def name(args), do: body`: the head `name(args)` is a call node but no call; skip it only.
            for argument in child.named_children[1:]:
                _walk(argument, spec, src, entity or parent, out)
            continue
        _walk(child, spec, src, entity or parent, out)


_PLAIN_NAME = re.compile(r"~?[A-Za-z_]\w*(::~?[A-Za-z_]\w*)*|operator\W.*", re.DOTALL)
_KEYWORDS = frozenset({"namespace", "template", "typename", "struct", "class", "enum", "union", "return", "if"})


def _clean_body(node: Any, name: str) -> bool:  # noqa: ANN401
    body = node.child_by_field_name("body")
    return body is not None and not body.has_error and name not in _KEYWORDS and _PLAIN_NAME.fullmatch(name) is not None


# Declarations that open an entity though the parser keeps them as siblings before it: a Haskell type signature
# (`name :: …`, same name only). Rust attributes and C# attribute lists would join here too; they change semble-dev's
# Rust chunks, so they wait for a gate run (issue 21).
_DECLARATION_PARTS = frozenset({"signature", "haddock"})


def _leading_comments_start(node: Any, src: bytes, name: str = "") -> int:  # noqa: ANN401
    """The first line of what declares `node`: its signature, attributes and the `/** … */` block right above it
    (Javadoc, JSDoc, Doxygen), on lines of their own with no blank line between: they belong to the entity's chunk
    rather than to a chunk of their own. Plain `//`, `#` and `///` comments stay where they are: joined too, they
    lowered semble-dev (Go, Rust)."""
    start = node.start_point[0]
    previous = node.prev_sibling
    while previous is not None and previous.end_point[0] >= start - 1:
        if previous.type in _DECLARATION_PARTS:
            if previous.type == "signature" and name and _raw_name(previous, src) not in {name, ""}:
                break
        elif "comment" in previous.type:
            line_start = src.rfind(b"\n", 0, previous.start_byte) + 1
            if src[line_start : previous.start_byte].strip():  # a trailing comment of the line above
                break
            if src[previous.start_byte : previous.start_byte + 3] != b"/**":
                break
        else:
            break
        start = previous.start_point[0]
        previous = previous.prev_sibling
    return start


def _flatten(entities: list[Entity]) -> list[Entity]:
    out: list[Entity] = []
    for entity in entities:
        out.append(entity)
        out.extend(_flatten(entity.children))
    return out


@dataclass(frozen=True, slots=True)
class ParsedCode:
    chunks: list[Chunk]
    problems: list[FileProblem]


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{start + n + 1}: {line}" for n, line in enumerate(lines))


def _line_windows(
    first: int, last: int, lines: list[str], limit: int, count_tokens: Callable[[str], int]
) -> list[tuple[int, int]]:
    """Inclusive [start, end] windows of lines first..last within `limit` tokens, overlapping OVERLAP_LINES."""
    # A line never has more tokens than characters: when that bound fits, nothing needs counting; when the counted
    # lines fit, the window is the whole range (what the loop below would find, without walking it).
    body = lines[first : last + 1]
    prefixes = 4 * len(body)
    if sum(len(line) for line in body) + prefixes <= limit or sum(map(count_tokens, body)) + prefixes <= limit:
        return [(first, last)]
    windows: list[tuple[int, int]] = []
    start = first
    while start <= last:
        end, used = start, 0
        while end <= last:
            cost = count_tokens(lines[end]) + 4  # the line number prefix
            if used + cost > limit and end > start:
                break
            used += cost
            end += 1
        windows.append((start, end - 1))
        if end > last:
            break
        start = max(start + 1, end - OVERLAP_LINES)
    return windows


def chunk_code(source: SourceFile, max_tokens: int, count_tokens: Callable[[str], int]) -> ParsedCode:
    """Entity chunks for a supported language, line chunks otherwise or on a parse error."""
    lines = source.text.split("\n")
    spec = language_of(source.path, source.text)
    language = spec.name if spec else PurePosixPath(source.path).suffix.lstrip(".") or "text"
    problems: list[FileProblem] = []
    entities: list[Entity] = []
    declared: dict[int, list[str]] = {}
    if spec is not None:
        src = source.text.encode("utf-8")
        tree = _parser(spec).parse(src)
        # tree-sitter recovers around a syntax error (in C an unknown macro is one): what parsed cleanly keeps its
        # entities, the code around the error becomes line chunks. Dropping every entity of such a file left 43 of
        # libuv's 104 files and 14 of fmtlib's 15 as line chunks only.
        if tree.root_node.has_error:
            bad = _first_error(tree.root_node)
            problems.append(
                FileProblem(source.path, f"syntax error near line {bad}; the code around it indexed as line chunks")
            )
        try:
            _entities(tree, spec, src, source, entities)
        except RecursionError:  # nesting deeper than the walk can follow: the file still gets line chunks
            entities.clear()
            problems[:] = [FileProblem(source.path, "nested too deeply to parse; indexed as line chunks")]
        if spec.names:
            declared = _declared_names(tree.root_node, spec, src, entities)
    chunks: list[Chunk] = []
    used_ids: set[str] = set()
    covered = [False] * len(lines)

    def emit(entity: Entity | None, start: int, end: int, kind: str, owner: str = "") -> None:
        name = entity.name if entity else ""
        parent = entity.parent if entity else owner
        header = f"{source.path} ({language}) {kind} {name}" + (f" in {parent}" if parent else "") + "\n"
        budget = max(32, max_tokens - count_tokens(header) - 2)
        windows = _line_windows(start, end, lines, budget, count_tokens)
        qualified = f"{parent}.{name}" if parent and name else name
        base = f"{source.path}#{qualified or f'L{start + 1}'}"
        for part, (first, last) in enumerate(windows):
            chunk_id = unique_chunk_id(base, part, used_ids)
            body = lines[first : last + 1]
            embed_text = header + (_numbered(body, first) if LINE_NUMBERS_IN_EMBEDDING else "\n".join(body))
            chunks.append(
                Chunk(
                    id=chunk_id,
                    path=source.path,
                    kind="code",
                    title=qualified or parent or PurePosixPath(source.path).name,
                    description="",
                    section=kind,
                    line_start=first + 1,
                    line_end=last + 1,
                    content="\n".join(body),
                    embed_text=embed_text,
                    content_hash=hashlib.sha256(embed_text.encode("utf-8")).hexdigest(),
                    language=language,
                    symbol=name,
                    symbol_kind=kind if entity else "",
                    parent=parent,
                    decorators=entity.decorators if entity else (),
                    exported=entity.exported if entity else None,
                    calls=tuple(sorted(entity.calls)) if entity else (),
                    names=tuple(name for line in range(first, last + 1) for name in declared.get(line, ())),
                )
            )

    owner: list[str] = [""] * len(lines)  # the innermost container around each line, for the lines between members
    for entity in _flatten(entities):  # outer containers come before their inner ones
        end = entity.end
        if entity.children and entity.kind in CONTAINERS:
            end = max(entity.start, min(child.start for child in entity.children) - 1)  # the header only
            owner[end + 1 : entity.end + 1] = [entity.name] * (entity.end - end)
        emit(entity, entity.start, end, entity.kind)
        for line in range(entity.start, end + 1):
            covered[line] = True
    # What no entity holds (imports, constants, fields between methods, code around a syntax error) is chunked as
    # runs of lines, split where the enclosing container changes; a run of braces and blank lines says nothing.
    gap_kind = "module" if spec is not None and not problems else "lines"
    gap_start = None
    for line in range(len(lines) + 1):
        inside_gap = line < len(lines) and not covered[line]
        if gap_start is not None and (not inside_gap or owner[line] != owner[gap_start]):
            first, last = gap_start, line - 1
            while first <= last and not lines[first].strip():
                first += 1
            while last >= first and not lines[last].strip():
                last -= 1
            if first <= last and any(ch.isalnum() for text in lines[first : last + 1] for ch in text):
                emit(None, first, last, gap_kind, owner[first])
            gap_start = None
        if inside_gap and gap_start is None:
            gap_start = line
    chunks.sort(key=lambda c: (c.line_start, c.line_end))
    return ParsedCode(chunks, problems)


def _entities(tree: Any, spec: LanguageSpec, src: bytes, source: SourceFile, entities: list[Entity]) -> None:  # noqa: ANN401
    _walk(tree.root_node, spec, src, None, entities)
    if spec.name == "python":
        from .pycalls import python_calls

        exact = python_calls(source.text, source.path)
        for entity in _flatten(entities):
            resolved = exact.get(entity.start + 1, set())
            # What `ast` pinned down replaces the name-only guess for the same call.
            names = {target.rsplit("::", 1)[1].rsplit(".", 1)[-1] for target in resolved}
            entity.calls = {c for c in entity.calls if c.lstrip(".") not in names} | resolved


_NAME_NODES = frozenset({"identifier", "type_identifier", "field_identifier", "constant", "property_identifier"})


_IMPORT_CALL = re.compile(rb"(await\s+)?(require|import)\s*\(")


def _is_import(node: Any, src: bytes) -> bool:  # noqa: ANN401
    """`const accepts = require('accepts')` names a module, it declares nothing."""
    value = node.child_by_field_name("value") or node.child_by_field_name("right")
    return value is not None and _IMPORT_CALL.match(src, value.start_byte) is not None


def _declared_names(root: Any, spec: LanguageSpec, src: bytes, entities: list[Entity]) -> dict[int, list[str]]:  # noqa: ANN401
    """Line (0-based) -> names declared there by `spec.names` nodes outside every function body."""
    inside_function: set[int] = set()
    for entity in _flatten(entities):
        if entity.kind not in CONTAINERS:
            inside_function.update(range(entity.start, entity.end + 1))
    found: dict[int, list[str]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        line = node.start_point[0]
        if node.type in spec.names and line not in inside_function and not _is_import(node, src):
            target = node.child_by_field_name("name") or node.child_by_field_name("left")
            target = target or node.child_by_field_name("declarator")
            while target is not None and target.type not in _NAME_NODES:  # C: `*name`, `name[8]`
                target = target.child_by_field_name("declarator")
            if target is not None:
                found.setdefault(line, []).append(_text(target, src))
        # a node wholly inside a function's lines declares only locals: its subtree is skipped
        stack.extend(
            child
            for child in node.children
            if child.start_point[0] not in inside_function or child.end_point[0] not in inside_function
        )
    return found


def _first_error(node: Any) -> int:  # noqa: ANN401
    stack = [node]
    while stack:
        current = stack.pop(0)
        if current.type == "ERROR" or current.is_missing:
            return current.start_point[0] + 1
        stack.extend(current.children)
    return node.start_point[0] + 1


@dataclass(frozen=True, slots=True)
class Definition:
    """One entity of a file as drift compares them across commits."""

    name: str  # qualified: `Parent.name`, or `name`
    kind: str
    start: int  # 1-based lines, inclusive
    end: int
    signature: str  # the first line, whitespace collapsed
    body: str


def _signature(lines: list[str], name: str) -> str:
    """The declaration: from the line naming the entity (past decorators) to where its body opens."""
    first = next((n for n, line in enumerate(lines[:8]) if name in line), 0)
    taken: list[str] = []
    for line in lines[first : first + 8]:
        taken.append(line.strip())
        if line.rstrip().endswith((":", "{", ";", "=>", "do")) or (line.strip().endswith(")") and len(taken) > 1):
            break
    return " ".join(" ".join(taken).split())


def outline(path: str, text: str) -> list[Definition]:
    """The entities of `path` holding `text` (empty for unsupported languages or files that do not parse)."""
    spec = language_of(path, text)
    if spec is None:
        return []
    src = text.encode("utf-8")
    tree = _parser(spec).parse(src)
    if tree.root_node.has_error:
        return []
    entities: list[Entity] = []
    try:
        _walk(tree.root_node, spec, src, None, entities)
    except RecursionError:
        return []
    lines = text.split("\n")
    return [
        Definition(
            name=f"{e.parent}.{e.name}" if e.parent else e.name,
            kind=e.kind,
            start=e.start + 1,
            end=e.end + 1,
            signature=_signature(lines[e.start : e.end + 1], e.name),
            body="\n".join(lines[e.start : e.end + 1]),
        )
        for e in _flatten(entities)
        if e.name
    ]
