"""What every renderer shares: the JSON format's version and the clipping of a line."""

from __future__ import annotations

SEARCH_FORMAT_VERSION = 2  # 2: a result's optional keys are left out when unset (null), not printed as null


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rsplit(" ", 1)[0] + " …"
