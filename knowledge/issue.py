"""An issue or task text read for its structure, not only its words: the title, the code it shows, traceback frames,
file paths and dotted module names, the names its code calls and the error messages it quotes.

What `locate` turns into evidence (locate.py); pure text work, no index."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_FENCE = re.compile(r"^\s*(```|~~~)")
_PROMPT = re.compile(r"^\s*(>>>|\.\.\.|In \[\d+\]:|\$ )\s?")
_OUTPUT = re.compile(r"^\s*Out\[\d+\]:")
_INLINE = re.compile(r"`([^`\n]{1,200})`")
# What a written path may end with: every suffix the chunker reads (tests/test_locate.py holds it to
# chunking.languages), Python's stubs and extensions, and the docs and configuration an issue names
SOURCE_SUFFIXES = frozenset(
    {"py", "pyx", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "go", "rs", "java", "kt", "kts", "scala", "sc", "rb",
     "php", "c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "cs", "swift", "ex", "exs", "hs", "lua", "sh", "bash",
     "zig", "md", "rst", "toml", "cfg", "ini", "yaml", "yml", "json"}
)  # fmt: skip
_SUFFIX = "|".join(sorted(SOURCE_SUFFIXES, key=len, reverse=True))
# Python's frames (`File "…/pkg/mod.py", line 12, in f`) and pytest's short ones (`pkg/mod.py:12: in f`)
_FRAME = re.compile(r"""File "([^"\n]+)", line (\d+)(?:, in ([\w<>.]+))?""")
_SHORT_FRAME = re.compile(r"^[ \t]*([\w./\\-]+\.\w{1,5}):(\d+):(?: in ([\w<>.]+))?", re.MULTILINE)
# IPython before 8: a header `~/pkg/mod.py in Cls.f(self, x)`, its source lines below, the one that ran `---> 41`
_IPYTHON_FRAME = re.compile(r"^[ \t]*((?:[A-Za-z]:)?[^\s\"'<>]+\.pyx?) in ([\w<>.]+)(?:\(.*)?$", re.MULTILINE)
_IPYTHON_RAN = re.compile(r"^-+> ?(\d+)", re.MULTILINE)
# A JVM frame: `at org.pkg.Cls$Inner.method(Cls.java:12)`, its file found under its package's folders
_JVM_FRAME = re.compile(r"\bat ((?:[\w$]+\.){1,30})([\w$<>]+)\(([\w$]+\.(?:java|kt|scala|groovy)):(\d+)\)")
# Any other tool's `path.ext:line` (IPython's `File ~/pkg/mod.py:41, in Cls.f(self)`, a warning's
# `…/pkg/text.py:206: UserWarning`, `INTERNALERROR> pkg/mod.py:12: in f`, Rust's `panicked at src/x.rs:12:5`, Go's
# `/src/pkg/file.go:12 +0x1d`, JavaScript's `at fn (file.js:12:5)`, a sanitizer's `#3 0x4f in fn file.c:12`, gdb's
# `#0 fn (a=1) at file.c:12`, a compiler's `src/a.c:12:5: error`); what names the function sits before or after it
_LOCATION = re.compile(rf"(?<![\w/.~@+-])((?:[A-Za-z]:)?[\w~./\\@+-]{{0,300}}\.(?:{_SUFFIX})):(\d+)(?![\w.])")
_FUNCTION_AFTER = re.compile(r"(?::\d+)?(?:,|:) in ([\w<>.]+)")
_FUNCTION_BEFORE = re.compile(
    r"(?:\bat ([\w$<>.]+) \(|\bin ([\w:<>~.$]+)(?:\([^)\n]{0,400}\))? "
    r"|#\d+ +(?:0x[0-9a-f]+ in )?([\w:<>~.$]+) \([^\n]{0,400}\) at )$"
)
_TRACE_LINE = re.compile(
    "|".join(p.pattern for p in (_FRAME, _SHORT_FRAME, _IPYTHON_FRAME, _JVM_FRAME, _LOCATION)) + r"|^\s*Traceback \(",
    re.MULTILINE,
)
_PYTHON_STYLE = re.compile(r"(?:^|\s)File $|^[ \t]*(?:[A-Z]+> *)?$")  # innermost last, as Python prints
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:{_SUFFIX}))(?![\w/])")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(])")
_CALLED = re.compile(r"(?<![\w])([A-Za-z_]\w{0,99}(?:\.[A-Za-z_]\w{0,99}){0,15})\s*\(")
_PROSE_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(\)?")  # `decompose()` said in a sentence
_ATTRIBUTE = re.compile(r"\.([A-Za-z_]\w*)")
_EXCEPTION = re.compile(
    r"^[ \t]*((?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt)):\s*(.+)$", re.MULTILINE
)
_QUOTED = re.compile(r"""["“']([^"'“”\n]{12,200})["”']""")
# A Python frame that shows its source lines below it: `File "…", line 12, in f`, IPython 8's `File ~/m.py:12, in f`
# and IPython 7's `~/m.py in f(x)`; the lines shown: indented, or IPython's numbered ones
_SHOWING_FRAME = re.compile(
    rf"{_FRAME.pattern}|File [^\s\"]+\.pyx?:\d+, in |^[ \t]*(?:[A-Za-z]:)?[^\s\"'<>]+\.pyx? in [\w<>.]+(?:\(.*)?$"
)
_SHOWN_CODE = re.compile(r"^(?:[ \t]+\S|-+>|\d)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
# A reproducer's import line (`from pkg.console import Console`, `>>> import pkg.mod as m`): the public modules every
# reproducer starts from, not the place, so neither its modules nor its names count (a name counts for its use)
_IMPORT_LINE = re.compile(
    r"^[ \t]*(?:(?:>>>|\.\.\.|In \[\d+\]:)[ \t]*)?(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]+[^\n]*$", re.MULTILINE
)
# An object's printed form (`<class 'pkg.console.Console'>`, `<pkg.mod.Table object at 0x7f…>`, a diagnostics box's
# title): what the user's program printed of its own objects, the package's central ones, not a place the text names
_REPR = re.compile(
    r"<(?:class|type|module|enum|function|bound method|built-in function|built-in method) '?[\w.<>]+'?[^<>\n]{0,200}>"
    r"|<[\w.]+ object at 0x[0-9a-fA-F]+>"
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
READ_HEAD = 16_000  # of a longer paste (a CI log), its first characters: the title, the report, the command run
READ_TAIL = 48_000  # and its last: the error and the frames nearest it
MAX_NAMES = 64  # the names an issue's code uses, most-used first: enough for any issue, bounded for a pasted log
_COMMON_WORDS = (
    "print self cls None True False len str int float list dict set tuple range type object isinstance super "
    "return import from def class lambda if else for in not and or is as with try except raise assert"
)
_COMMON = frozenset(_COMMON_WORDS.split())


@dataclass(frozen=True, slots=True)
class Frame:
    path: str
    line: int
    function: str
    position: int  # 0 the frame nearest the error (a traceback's last), 1 the one before it, ...


@dataclass(frozen=True, slots=True)
class IssueText:
    text: str
    title: str
    prose: str  # the text outside code blocks
    words: tuple[str, ...]  # the title's and the prose's words, lower case, as written (`intpoly`, `lambdify`)
    code: str  # the code blocks and prompts, joined
    frames: tuple[Frame, ...]
    paths: tuple[str, ...]  # file paths as written (`sympy/core/basic.py`, `basic.py`)
    modules: tuple[str, ...]  # dotted names that may be modules or qualified names (`sympy.core.basic`, `Foo.bar`),
    # an import line's and a printed object's (`<class 'pkg.mod.Cls'>`) excepted
    names: tuple[str, ...]  # what the code calls or reads as an attribute, most used first (an import line names the
    # public entry point every reproducer starts from, not the place: it counts for nothing)
    messages: tuple[str, ...]  # error messages and quoted strings, as written


def clip_paste(text: str) -> tuple[str, int]:
    """What of `text` is read: all of it up to READ_HEAD + READ_TAIL characters, else its head and its tail, each cut
    at a line's end; and how many characters were left out between them."""
    if len(text) <= READ_HEAD + READ_TAIL:
        return text, 0
    head = text[:READ_HEAD]
    head = head[: head.rfind("\n") + 1] or head
    tail = text[-READ_TAIL:]
    tail = tail[tail.find("\n") + 1 :] or tail
    return head + tail, len(text) - len(head) - len(tail)


def read_issue(text: str) -> IssueText:
    title = next((line.strip() for line in text.splitlines() if line.strip()), "")
    prose_lines, code_lines = _split_code(text)
    code = "\n".join(code_lines)
    inline = [m.group(1) for m in _INLINE.finditer("\n".join(prose_lines))]
    codeish = _REPR.sub("", _IMPORT_LINE.sub("", code + "\n" + "\n".join(inline)))
    return IssueText(
        text=text,
        title=title,
        prose="\n".join(prose_lines),
        words=tuple(
            dict.fromkeys(w.lower() for w in _WORD.findall(title + "\n" + _REPR.sub("", _untraced(prose_lines))))
        ),
        code=code,
        frames=_frames(text),
        paths=tuple(dict.fromkeys(m.group(1).replace("\\", "/") for m in _PATH.finditer(text))),
        modules=tuple(dict.fromkeys(m.group(1) for m in _DOTTED.finditer(_REPR.sub("", _IMPORT_LINE.sub("", text))))),
        names=_names(codeish + "\n" + _prose_calls(prose_lines), title),
        messages=_messages(text),
    )


def _untraced(prose: list[str]) -> str:
    """The prose less its trace lines: a frame's `File`, `line` and folders are no module the text names."""
    return "\n".join(line for line in prose if not _TRACE_LINE.search(line))


def _split_code(text: str) -> tuple[list[str], list[str]]:
    """Prose lines and code lines: fenced blocks, interpreter prompts (`>>>`, `In [1]:`) and indented blocks."""
    prose: list[str] = []
    code: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or _PROMPT.match(line) or line.startswith(("    ", "\t")):
            code.append(_PROMPT.sub("", line, count=1))
        elif _OUTPUT.match(line):
            continue
        else:
            prose.append(line)
    return prose, code


def _frames(text: str) -> tuple[Frame, ...]:
    """Every frame of every trace, each with its distance from its trace's error: Python prints the frame nearest the
    error last, the JVM, Go, Rust, JavaScript, sanitizers and gdb print it first."""
    found = [(m.start(), m.group(1), int(m.group(2)), m.group(3) or "", False) for m in _FRAME.finditer(text)]
    found += [(m.start(), m.group(1), int(m.group(2)), m.group(3) or "", False) for m in _SHORT_FRAME.finditer(text)]
    found += [_ipython_frame(text, m) for m in _IPYTHON_FRAME.finditer(text)]
    taken = [start for start, *_ in found]
    for m in _JVM_FRAME.finditer(text):
        folders = m.group(1).rstrip(".").split(".")[:-1]  # the package: the qualified name less its class
        found.append((m.start(), "/".join([*folders, m.group(3)]), int(m.group(4)), m.group(2), True))
        taken.append(m.start(3))
    taken.sort()
    found += [_located(text, m) for m in _LOCATION.finditer(text) if not _covered(m, taken)]
    found.sort()
    # with several traces, each one's frames count from its own error
    blocks: list[list[tuple[str, int, str]]] = []
    firsts: list[bool] = []
    previous_end = -1
    for start, path, line, function, innermost_first in found:
        if not blocks or start - previous_end > 600 or innermost_first != firsts[-1]:
            blocks.append([])
            firsts.append(innermost_first)
        blocks[-1].append((path.replace("\\", "/"), line, function))
        previous_end = start
    frames = []
    for block, innermost_first in zip(blocks, firsts, strict=True):
        for position, (path, line, function) in enumerate(block if innermost_first else reversed(block)):
            frames.append(Frame(path, line, function, position))
    return tuple(frames)


def _ipython_frame(text: str, match: re.Match[str]) -> tuple[int, str, int, str, bool]:
    """A frame as IPython before 8 prints it: the line is the `--->` one among the source lines up to the next blank."""
    block_end = text.find("\n\n", match.end())
    ran = _IPYTHON_RAN.search(text, match.end(), block_end if block_end >= 0 else len(text))
    return match.start(), match.group(1), int(ran.group(1)) if ran else 0, match.group(2), False


def _covered(match: re.Match[str], taken: list[int]) -> bool:
    """A location a Python or JVM frame already read (theirs start on its line, at `File "`, `at ` or the path)."""
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    first = bisect.bisect_left(taken, line_start)
    return first < len(taken) and taken[first] <= match.start()


def _located(text: str, match: re.Match[str]) -> tuple[int, str, int, str, bool]:
    # what names the function is within a few hundred characters of the location (a pasted log may be one long line)
    line_start = text.rfind("\n", max(0, match.start() - 600), match.start()) + 1 or max(0, match.start() - 600)
    line_end = text.find("\n", match.end(), match.end() + 200)
    before, after = (
        text[line_start : match.start()],
        text[match.end() : line_end if line_end >= 0 else match.end() + 200],
    )
    named = _FUNCTION_AFTER.match(after)
    prior = _FUNCTION_BEFORE.search(before)
    function = named.group(1) if named else next((g for g in prior.groups() if g), "") if prior else ""
    python_style = _PYTHON_STYLE.search(before) is not None and (named is not None or before.strip().endswith("File"))
    return match.start(), match.group(1), int(match.group(2)), function, not python_style


def _prose_calls(prose: list[str]) -> str:
    """`decompose()` and `Matrix.col_insert(...)` written in a sentence, as code."""
    return "\n".join(m.group(0) + ")" for line in prose for m in _PROSE_CALL.finditer(line))


def _names(code: str, title: str) -> tuple[str, ...]:
    counts: dict[str, int] = {}

    def add(name: str, weight: int = 1) -> None:
        if len(name) > 1 and name not in _COMMON and not name.isdigit():
            counts[name] = counts.get(name, 0) + weight

    for match in _CALLED.finditer(code):
        for part in match.group(1).split("."):
            add(part)
    for match in _ATTRIBUTE.finditer(code):
        add(match.group(1))
    for token in _IDENT.findall(title):  # a title's identifiers (`Matrix.col_insert() no longer works`) are names
        if "_" in token or (token[0].islower() and any(c.isupper() for c in token)):
            add(token, 2)
    ranked = sorted(counts, key=lambda name: -counts[name])
    return tuple(ranked[:MAX_NAMES])


def _messages(text: str) -> tuple[str, ...]:
    found = [m.group(2).strip() for m in _EXCEPTION.finditer(text)]
    found += [m.group(1).strip() for m in _QUOTED.finditer(_less_outer_frames_code(text)) if " " in m.group(1).strip()]
    return tuple(dict.fromkeys(message for message in found if len(message) >= 8))


def _less_outer_frames_code(text: str) -> str:
    """The text less the source lines a trace shows under each frame but the one nearest its error: a string quoted
    there is its frame's code, which the frame already votes for, not a message anyone saw (the nearest frame's line
    is the one that raised, whose string is the error's own)."""
    lines = text.splitlines()
    shown: list[list[int]] = []  # the current trace's frames, each with the lines shown under it
    open_frame = False
    outer: set[int] = set()
    for number, line in enumerate(lines):
        if _SHOWING_FRAME.search(line):
            if shown:
                outer.update(shown[-1])
            shown.append([])
            open_frame = True
        elif _EXCEPTION.match(line):
            shown, open_frame = [], False  # the trace ends at its error; its last frame's lines are the raise
        elif not line.strip():
            open_frame = False
        elif open_frame and _SHOWN_CODE.match(line):
            shown[-1].append(number)
        else:
            open_frame = False
    return "\n".join(line for number, line in enumerate(lines) if number not in outer) if outer else text
