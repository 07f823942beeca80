"""Stable, readable chunk ids: `path#name`, `-N` for a repeated name, `~N` for the Nth part of a split one."""

from __future__ import annotations


def unique_chunk_id(base: str, part: int, used: set[str]) -> str:
    """The id of part `part` (0-based) of `base`, made unique within one file and recorded in `used`."""
    chunk_id = base if part == 0 else f"{base}~{part + 1}"
    suffix = 2
    while chunk_id in used:
        chunk_id = f"{base}-{suffix}" + (f"~{part + 1}" if part else "")
        suffix += 1
    used.add(chunk_id)
    return chunk_id
