"""What every renderer shares: the JSON format's version and the clipping of a line."""

from __future__ import annotations

SEARCH_FORMAT_VERSION = 2  # 2: a result's optional keys are left out when unset (null), not printed as null


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + " …"


_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_UNSHOWN = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))},
    **{code: f"\\u{code:04x}" for code in (*_BIDI, *range(0xD800, 0xE000))},
}


def shown(text: str) -> str:
    """`text` (a file name, a title) safe to print on a line of its own: control characters, bidirectional
    overrides and undecodable bytes written as escapes (`\\x0a`, `\\u202e`), so a name can neither start a line
    that reads like a result nor reorder what a terminal shows."""
    return text.translate(_UNSHOWN)


def escaped_json(text: str) -> str:
    """JSON text whose strings hold no raw surrogate (an undecodable file name read with surrogateescape): each is
    written as its `\\udcXX` escape, so the output is UTF-8 and parses."""
    if text.isascii():
        return text
    return "".join(f"\\u{ord(char):04x}" if 0xD800 <= ord(char) < 0xE000 else char for char in text)


_TEST_FOLDERS = frozenset({"test", "tests", "testdata", "fixtures", "__fixtures__", "spec", "__tests__"})


def in_test_folder(path: str) -> bool:
    """Whether `path` lies in a tests or fixtures folder (a redaction there is counted, not listed)."""
    return any(part.lower() in _TEST_FOLDERS for part in path.split("/")[:-1])
