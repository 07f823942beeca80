"""The entity walk: functions, methods and classes of a parsed file with their names, parents, decorators, exported
flag, exact line ranges (doc comments and signatures joined) and the names they call; and the constants, variables
and type aliases declared outside them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..records import CONTAINERS, SourceFile
from .languages import LanguageSpec
from .tree import Node, Tree, node_text


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


def _name(node: Node, src: bytes) -> str:
    return _without_template_arguments(_raw_name(node, src))


def _raw_name(node: Node, src: bytes) -> str:
    named = node.child_by_field_name("name")
    if named is not None:
        return node_text(named, src)
    if node.type in {"arrow_function", "function_expression"} and node.parent is not None:
        holder = node.parent  # const name = () => …  /  name: function () …
        target = (  # or `obj.name = function () …`, named `obj.name`
            holder.child_by_field_name("name")
            or holder.child_by_field_name("key")
            or holder.child_by_field_name("left")
        )
        return node_text(target, src) if target is not None and target.type != "subscript_expression" else ""
    if node.type == "impl_item":  # impl<S> Trait<S> for Query<T> -> Query
        kind = node.child_by_field_name("type")
        return node_text(kind, src) if kind is not None else ""
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:  # C/C++: int *f(int) -> f; A::b -> A::b
        if declarator.type in {
            "identifier",
            "field_identifier",
            "qualified_identifier",
            "destructor_name",
            "operator_name",
        }:
            return node_text(declarator, src)
        declarator = declarator.child_by_field_name("declarator")
    return ""


def _callee(node: Node, src: bytes) -> str:
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
        return "." + node_text(target, src)  # Ruby obj.m
    for field_name in ("property", "field", "attribute", "name"):  # obj.method() -> ".method"
        inner = target.child_by_field_name(field_name)
        if inner is not None and target.type not in {"identifier"}:
            return "." + node_text(inner, src)
    if node.type == "method_invocation" and node.child_by_field_name("object") is not None:
        return "." + node_text(target, src)  # Java obj.m()
    name = node_text(target, src)
    return "." + name.split("::")[-1].split(".")[-1] if ("." in name or "::" in name) else name


def walk(node: Node, spec: LanguageSpec, src: bytes, parent: Entity | None, out: list[Entity]) -> None:
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
                receiver_type = (
                    node_text(receiver, src).strip("()").split()[-1].lstrip("*") if receiver is not None else ""
                )
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
                tuple(node_text(child, src) for child in start_node.children if child.type == "decorator")
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
                walk(argument, spec, src, entity or parent, out)
            continue
        walk(child, spec, src, entity or parent, out)


_PLAIN_NAME = re.compile(r"~?[A-Za-z_]\w*(::~?[A-Za-z_]\w*)*|operator\W.*", re.DOTALL)
_KEYWORDS = frozenset({"namespace", "template", "typename", "struct", "class", "enum", "union", "return", "if"})


def _clean_body(node: Node, name: str) -> bool:
    body = node.child_by_field_name("body")
    return body is not None and not body.has_error and name not in _KEYWORDS and _PLAIN_NAME.fullmatch(name) is not None


# Declarations that open an entity though the parser keeps them as siblings before it: a Haskell type signature
# (`name :: …`, same name only) and Haddock comment, Rust attributes (`#[inline]`), TypeScript decorators of a class
# member (`@Input()`), and Elixir's `@doc`, `@spec` and `@impl` above a `def`.
_DECLARATION_PARTS = frozenset({"signature", "haddock", "attribute_item", "decorator"})
_ELIXIR_DECLARATION = re.compile(rb"@(doc|spec|impl|deprecated|decorate)\b")


def _doc_comment(head: bytes) -> bool:
    """`/** … */` (Javadoc, JSDoc, Doxygen) and `///` (Rust, C#, Swift, Doxygen) are doc comments; `////` is none."""
    return head.startswith(b"/**") or (head.startswith(b"///") and not head.startswith(b"////"))


def _leading_comments_start(node: Node, src: bytes, name: str = "") -> int:
    """The first line of what declares `node`: its signature, attributes, decorators and the doc comment right above
    it, on lines of their own with no blank line between: they belong to the entity's chunk rather than to a chunk of
    their own. Plain `//` and `#` comments stay where they are: joined too, they lowered semble-dev (Go)."""
    start = node.start_point[0]
    previous = node.prev_sibling
    while previous is not None and previous.end_point[0] >= start - 1:
        if previous.type in _DECLARATION_PARTS:
            if previous.type == "signature" and name and _raw_name(previous, src) not in {name, ""}:
                break
        elif previous.type == "unary_operator":
            if not _ELIXIR_DECLARATION.match(src, previous.start_byte):
                break
        elif "comment" in previous.type:
            line_start = src.rfind(b"\n", 0, previous.start_byte) + 1
            if src[line_start : previous.start_byte].strip():  # a trailing comment of the line above
                break
            if not _doc_comment(src[previous.start_byte : previous.start_byte + 4]):
                break
        else:
            break
        start = previous.start_point[0]
        previous = previous.prev_sibling
    return start


def flatten(entities: list[Entity]) -> list[Entity]:
    out: list[Entity] = []
    for entity in entities:
        out.append(entity)
        out.extend(flatten(entity.children))
    return out


_OVERLOAD = re.compile(r"@\s*(?:[A-Za-z_]\w*\.)*overload\b")


def join_overloads(siblings: list[Entity]) -> None:
    """`@overload` stubs declare the function defined right after them: that function's entity starts at the first
    stub, so an answer shows the signatures with the body that implements them (not a stub with none)."""
    stubs: list[Entity] = []
    kept: list[Entity] = []
    for entity in siblings:
        join_overloads(entity.children)
        if stubs and entity.name != stubs[0].name:
            kept += stubs
            stubs = []
        if any(_OVERLOAD.match(decorator) for decorator in entity.decorators):
            stubs.append(entity)
            continue
        if stubs:
            entity.start = stubs[0].start
            for stub in stubs:
                entity.calls |= stub.calls
            stubs = []
        kept.append(entity)
    siblings[:] = kept + stubs


def find_entities(tree: Tree, spec: LanguageSpec, src: bytes, source: SourceFile, entities: list[Entity]) -> None:
    walk(tree.root_node, spec, src, None, entities)
    if spec.name == "python":
        join_overloads(entities)
        from .pycalls import python_calls

        exact = python_calls(source.text, source.path)
        for entity in flatten(entities):
            resolved = exact.get(entity.start + 1, set())
            # What `ast` pinned down replaces the name-only guess for the same call.
            names = {target.rsplit("::", 1)[1].rsplit(".", 1)[-1] for target in resolved}
            entity.calls = {c for c in entity.calls if c.lstrip(".") not in names} | resolved


_NAME_NODES = frozenset({"identifier", "type_identifier", "field_identifier", "constant", "property_identifier"})


_IMPORT_CALL = re.compile(rb"(await\s+)?(require|import)\s*\(")


def _is_import(node: Node, src: bytes) -> bool:
    """`const accepts = require('accepts')` names a module, it declares nothing."""
    value = node.child_by_field_name("value") or node.child_by_field_name("right")
    return value is not None and _IMPORT_CALL.match(src, value.start_byte) is not None


def declared_names(root: Node, spec: LanguageSpec, src: bytes, entities: list[Entity]) -> dict[int, list[str]]:
    """Line (0-based) -> names declared there by `spec.names` nodes outside every function body."""
    inside_function: set[int] = set()
    for entity in flatten(entities):
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
                found.setdefault(line, []).append(node_text(target, src))
        # a node wholly inside a function's lines declares only locals: its subtree is skipped
        stack.extend(
            child
            for child in node.children
            if child.start_point[0] not in inside_function or child.end_point[0] not in inside_function
        )
    return found


def first_error_line(node: Node) -> int:
    stack = [node]
    while stack:
        current = stack.pop(0)
        if current.type == "ERROR" or current.is_missing:
            return current.start_point[0] + 1
        stack.extend(current.children)
    return node.start_point[0] + 1
