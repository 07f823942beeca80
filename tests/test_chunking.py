from knowledge.chunking.markdown import chunk_markdown
from knowledge.records import SourceFile


def words(text):
    return len(text.split())


def chunk(text, path="docs/a.md", max_tokens=384):
    return chunk_markdown(SourceFile(path, "doc", text, "h"), max_tokens, words)


DOC = """---
title: Hooks
description: How hooks work.
tags: [git, hooks]
---
Intro paragraph.

# Install

Run this.

```
# not a heading
```

## With pip

pip install it
"""


def test_sections_follow_headings_with_exact_line_ranges():
    parsed = chunk(DOC)
    lines = DOC.split("\n")
    assert [(c.id, c.section, c.line_start, c.line_end) for c in parsed.chunks] == [
        ("docs/a.md#top", "", 6, 6),
        ("docs/a.md#install", "Install", 8, 14),
        ("docs/a.md#with-pip", "Install > With pip", 16, 18),
    ]
    for c in parsed.chunks:
        assert "\n".join(lines[c.line_start - 1 : c.line_end]) == c.content
    assert parsed.meta.title == "Hooks"
    assert parsed.meta.tags == ("git", "hooks")


def test_front_matter_stays_out_of_content_but_in_embedded_header():
    parsed = chunk(DOC)
    assert all("description:" not in c.content for c in parsed.chunks)
    assert parsed.chunks[1].embed_text.startswith("Hooks: How hooks work.\nInstall\n\n# Install")


def test_malformed_yaml_is_reported_with_its_line_and_indexed_as_plain_text():
    text = "---\ntitle: [unclosed\ndescription: x\n---\n# Heading\n\nbody text\n"
    parsed = chunk(text, "b.md")
    assert len(parsed.problems) == 1
    assert parsed.problems[0].path == "b.md"
    assert "malformed YAML front matter at line 3" in parsed.problems[0].problem
    assert any("body text" in c.content for c in parsed.chunks)


def test_doc_without_headings_is_one_chunk_titled_by_file_name():
    parsed = chunk("just some words\nand more words\n", "notes/plain.md")
    assert [(c.title, c.section, c.line_start, c.line_end) for c in parsed.chunks] == [("plain", "", 1, 2)]


def test_long_section_is_split_within_the_token_limit_with_overlap():
    text = "# Big\n\n" + "\n".join(f"line {i} " + "word " * 20 for i in range(100))
    parsed = chunk(text, max_tokens=128)
    assert len(parsed.chunks) > 5
    for c in parsed.chunks:
        assert words(c.embed_text) <= 128
    starts = [c.line_start for c in parsed.chunks]
    ends = [c.line_end for c in parsed.chunks]
    assert starts == sorted(starts)
    assert all(nxt <= end + 1 for end, nxt in zip(ends, starts[1:], strict=False))  # no gaps
    assert ends[-1] == text.count("\n") + 1
    assert len({c.id for c in parsed.chunks}) == len(parsed.chunks)


def test_empty_file_gives_no_chunks():
    assert chunk("").chunks == []


def test_duplicate_headings_get_distinct_ids():
    parsed = chunk("# A\n\none\n\n# A\n\ntwo\n")
    assert [c.id for c in parsed.chunks] == ["docs/a.md#a", "docs/a.md#a-2"]


def test_a_paragraph_on_one_long_line_is_split_within_the_limit():
    sentence = "This sentence has exactly eight words in it. "
    text = "# Long\n\n" + sentence * 60 + "\n\nAfter.\n"
    parsed = chunk(text, max_tokens=64)
    assert len(parsed.chunks) > 5
    for c in parsed.chunks:
        assert words(c.embed_text) <= 64
    middle = [c for c in parsed.chunks if c.line_start == c.line_end == 3]
    assert len(middle) >= 5
    assert all(c.content.rstrip().endswith(".") for c in middle[:-1])  # cut at sentence ends
    joined = " ".join(c.content for c in middle)
    assert joined.count("eight words") >= 60  # nothing lost (overlap may repeat some)


LABELLED = """---
description: Shell completion.
---
(shell-completion)=

# Shell Completion

How completion works.

(completion-install)=
## Install

Add the line to your shell.

.. _custom-types:

<a name="types"></a>

Custom types
------------

Types complete too.
"""


def test_label_lines_join_the_section_they_label():
    parsed = chunk(LABELLED)
    lines = LABELLED.split("\n")
    assert [(c.section, c.line_start, c.line_end) for c in parsed.chunks] == [
        ("Shell Completion", 4, 8),
        ("Shell Completion > Install", 10, 13),
        ("Shell Completion > Custom types", 15, 22),
    ]
    for c in parsed.chunks:
        assert "\n".join(lines[c.line_start - 1 : c.line_end]) == c.content
    assert not any(c.content.strip() in {"(shell-completion)=", "(completion-install)="} for c in parsed.chunks)


def test_a_label_above_a_heading_with_no_text_is_no_chunk():
    assert chunk("(only-a-label)=\n# Title\n").chunks == []
