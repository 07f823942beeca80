"""How much of a text a tokenizer needs to see for its first N tokens."""

from __future__ import annotations

CHARS_A_TOKEN = 64  # far more than any token of these vocabularies spans (WordPiece reads words of up to 100)


def window(text: str, tokens: int) -> str:
    """The start of `text` that holds its first `tokens` tokens (a tokenizer reads all it is given before it
    truncates: a 2 MB line cost seconds for a count that stops at the model's window); `text` itself when short. A
    window that holds fewer than `tokens` tokens (giant words) says to read the whole text after all."""
    limit = tokens * CHARS_A_TOKEN
    return text if len(text) <= limit else text[:limit]
