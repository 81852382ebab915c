"""Walking a folder, reading every format, splitting into passages."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from iterretgen_tui.engine.indexing import documents, formats
from iterretgen_tui.engine.indexing.chunking import ChunkOptions, spanning, split
from iterretgen_tui.engine.indexing.documents import FileEntry, SkipFile
from iterretgen_tui.engine.indexing.indexer import IndexReport
from iterretgen_tui.engine.indexing.ocr import OcrRun
from iterretgen_tui.engine.loop.evidence import sentences
from tests import docfolder


def chunks_of(path: Path, **kwargs):
    entry, data = documents.read(FileEntry.of(path, path.stat()))
    return documents.passages(path, data, **kwargs)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return docfolder.build(tmp_path_factory.mktemp("docs"))


def test_scan_lists_regular_files_and_reports_links(folder):
    files, skipped = documents.scan(folder)
    names = {str(f.path.relative_to(folder)) for f in files}
    assert set(docfolder.GOOD) <= names
    assert not any(name.startswith(".") or "/." in name for name in names), "hidden files are left out"
    reasons = {str(Path(s.path).relative_to(folder)): s.reason for s in skipped}
    assert reasons["loop"] == "symlink loop"
    assert reasons["dangling"].startswith("dangling symlink to missing-target.txt")
    assert reasons["nested/up"].startswith("symlink loop")
    assert reasons["pipe"].startswith("not a regular file")
    assert [f.path for f in files] == sorted(f.path for f in files)
    folders = sorted(str(Path(s.path).relative_to(folder)) for s in skipped if s.folder)
    assert folders == ["nested/up"], "a link back to a folder is a folder left out; a link to itself is not"
    assert IndexReport(skipped=skipped).not_read() == f"{len(skipped) - 1} files and 1 folder"


def test_scan_skips_names_that_are_not_utf8(tmp_path):
    (tmp_path / "fine.txt").write_text("ok")
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt"), "w") as fh:
        fh.write("latin-1 file name")
    files, skipped = documents.scan(tmp_path)
    assert [f.path.name for f in files] == ["fine.txt"]
    assert [(Path(s.path).name, s.reason) for s in skipped] == [
        ("caf\ufffd.txt", "the name is not valid UTF-8; rename it to index it")
    ]


def test_scan_follows_a_symlinked_folder_once(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("alpha")
    os.symlink("real", tmp_path / "alias")
    files, skipped = documents.scan(tmp_path)
    assert [f.path.name for f in files] == ["a.txt"]
    assert len(skipped) == 1 and skipped[0].reason.startswith("symlink loop")


@pytest.mark.parametrize("name", sorted(docfolder.GOOD))
def test_every_format_yields_its_text(folder, name):
    chunks = chunks_of(folder / name)
    assert any(docfolder.GOOD[name] in c.text for c in chunks)
    assert all(c.location for c in chunks)


@pytest.mark.parametrize(
    "name", sorted(n for n in docfolder.BROKEN if n not in ("loop", "dangling", "nested/up", "pipe"))
)
def test_every_broken_file_is_skipped_with_its_reason(folder, name):
    path = folder / name
    with pytest.raises(SkipFile) as caught:
        entry, data = documents.read(FileEntry.of(path, path.stat()), docfolder.SMALL_CAP)
        documents.passages(path, data, ocr=OcrRun())  # as the folder indexer reads by default
    assert caught.value.reason.startswith(docfolder.BROKEN[name])


def test_html_keeps_only_visible_text(folder):
    [chunk] = chunks_of(folder / "page.html")
    for hidden in ("secret", "hiddenscript", "hiddencomment", "hiddendiv", "Zoo Page"):
        assert hidden not in chunk.text
    assert chunk.heading == "Zoo Page › Mammals"
    assert chunk.text == "The chinchilla is soft."  # the heading titles it, not glued to its sentence
    assert chunk.location == "line 4"


def test_html_reads_as_a_page_draws_it():
    page = formats.html(
        "<ul><li>First <b>item</b> here.</li><li>Second item here.</li></ul>"
        "<dl><dt><tt>gnats</tt></dt><dd>It had uid 41.</dd>"
        "<dt><tt>nobody</tt>, <tt>nogroup</tt></dt><dd>Daemons that own no files run as it.</dd>"
        "<dt>Note:</dt><dd>Kept.</dd></dl>"
    )
    assert [block.text for block in page.blocks] == [
        *("- First item here.", "- Second item here."),
        *("- gnats:", "It had uid 41.", "- nobody, nogroup:", "Daemons that own no files run as it."),
        *("- Note:", "Kept."),
    ]
    # Inline elements flow in their line, the page's controls and navigation are left out.
    page = formats.html(
        '<div id="mdbook-help-container"><div id="mdbook-help-popup"><p>Press S to search</p></div></div>'
        "<nav><ol><li>Chapter one</li></ol></nav><button>Light</button>"
        '<div style="display: none">Press S to search</div><ul role="menu"><li>Coal</li></ul>\n'
        "<p>A tool called <code>rustdoc</code>. Its job is\nto <em>generate</em> docs.</p>"
        "<p>Document this code:</p><pre><code>let x = 5;\nlet y = 6;</code></pre>"
    )
    assert [(block.number, block.text) for block in page.blocks] == [
        (2, "A tool called rustdoc. Its job is"),
        (3, "to generate docs."),
        (3, "Document this code:"),
        *((3, "```"), (3, "let x = 5;"), (4, "let y = 6;"), (4, "```")),  # fenced, as in Markdown
    ]
    # A passage keeps each drawn line apart, though they share a source line.
    [chunk] = split(page, ChunkOptions(100, 0))
    assert chunk.text.endswith("Document this code:\n```\nlet x = 5;\nlet y = 6;\n```")
    assert chunk.location == "lines 2-4"
    # A paragraph's source line that code opens is no list item; a code block's line is kept.
    page = formats.html("<p>Use the\n<code>*</code> operator.</p><pre>let y =\n* x;</pre>")
    assert [block.text for block in page.blocks] == ["Use the * operator.", "```", "let y =", "* x;", "```"]


def test_an_html_tables_rows_read_as_markdown_rows_under_its_header():
    from iterretgen_tui.engine.loop.evidence import sentences

    page = formats.html(
        "<table><thead><tr><th>Name</th><th>Default</th></tr></thead>\n"
        "<tr><td><code>top_k</code></td><td>5, <em>at most</em> 50</td></tr>\n"
        "<tr><td>a|b or c</td><td></td></tr></table><p>Then:</p>\n"
        "<table><tr><td>no</td><td>header</td></tr><tr><td>plain</td><td>rows</td></tr></table>\n"
        "<table><tr><td>one column</td></tr><tr><td>lays out</td></tr></table>"
    )
    assert [(block.number, block.text) for block in page.blocks] == [
        *((1, "| Name | Default |"), (1, "| --- | --- |"), (2, "| top_k | 5, at most 50 |"), (3, "| a\\|b or c | |")),
        *((3, "Then:"), (4, "| no | header |"), (4, "| plain | rows |")),  # no header cells: no column names
        *((5, "one column"), (5, "lays out")),
    ]
    assert sentences(split(page, ChunkOptions(100, 0))[0].text)[:2] == [
        "Name: top_k; Default: 5, at most 50",
        "Name: a|b or c",
    ]


def test_pdf_passages_cite_their_page(folder):
    chunks = chunks_of(folder / "paper.pdf")
    assert [(c.location, c.heading) for c in chunks] == [("p. 1", "Desert Study"), ("p. 2", "Desert Study")]
    assert "dromedary" in chunks[1].text and "dromedary" not in chunks[0].text


def test_pdf_running_heads_feet_and_dot_leaders_are_not_read(tmp_path):
    pages = [["Contents", "1 Setup . . . . . . . . . 2", "2 Usage ............ 3"]]
    for n in (1, 2, 3):
        body = [f"Step {n} of the setup.", "Cranes need oil.", f"Check cable {chr(64 + n)}."]
        pages.append(["Field Manual", f"Chapter {n}: Setup {n + 1}", *body, str(n + 1)])
    path = tmp_path / "manual.pdf"
    path.write_bytes(docfolder.pdf_bytes(pages))
    lines = [(b.page, b.text) for b in formats.pdf(path.read_bytes()).blocks]
    assert lines[:3] == [(1, "Contents"), (1, "1 Setup … 2"), (1, "2 Usage … 3")]
    assert [text for page, text in lines if page == 3] == [
        "Step 2 of the setup.",
        "Cranes need oil.",
        "Check cable B.",
    ]


def test_a_short_chapters_running_head_carries_the_pages_number(tmp_path):
    # Three pages of one chapter make its head a running one; a chapter of two pages is
    # known by the printed page number its head carries, as the others' do (page - 1).
    pages = [["Cover"]]
    pages += [[f"Chapter 1: Setup {n}", f"Setup step {n} is done by hand.", "The crane needs oil."] for n in (1, 2, 3)]
    pages += [[f"Chapter 2: Care {n}", f"Revision {n + 3}", "Grease the cable."] for n in (4, 5)]
    path = tmp_path / "manual.pdf"
    path.write_bytes(docfolder.pdf_bytes(pages))
    lines = [(b.page, b.text) for b in formats.pdf(path.read_bytes()).blocks]
    assert [text for page, text in lines if page >= 5] == [
        "Revision 7",  # a number, but not the page's
        "Grease the cable.",
        "Revision 8",
        "Grease the cable.",
    ]


def test_docx_headings_title_and_tables(folder):
    chunks = chunks_of(folder / "report.docx")
    assert [c.heading for c in chunks] == ["Quarterly Report › Revenue", "Quarterly Report › Staff"]
    assert "kiwis" in chunks[1].text and chunks[1].location.startswith("paragraphs ")
    # The heading titles its passage, not glued to its first sentence.
    assert chunks[0].text == "Revenue grew in the northern region thanks to pelican sales."


def test_a_word_tables_rows_are_lines_under_a_bold_or_repeated_header():
    import io

    import docx

    document = docx.Document()
    bold = document.add_table(rows=3, cols=2)
    for cell, text in zip(bold.rows[0].cells, ["Key", "Action"]):
        cell.paragraphs[0].add_run(text).bold = True
    bold.cell(1, 0).text, bold.cell(1, 1).text = "F5", "open the models | pull"
    repeated = document.add_table(rows=2, cols=2)
    repeated.cell(0, 0).text, repeated.cell(0, 1).text = "Name", "Default"
    repeated.rows[0]._tr.get_or_add_trPr().append(repeated.rows[0]._tr.makeelement(docx.oxml.ns.qn("w:tblHeader")))
    repeated.cell(1, 0).text, repeated.cell(1, 1).text = "top_k", "5"
    plain = document.add_table(rows=2, cols=2)
    plain.cell(0, 0).text, plain.cell(0, 1).text, plain.cell(1, 0).text = "Q3", "1200", "Q4"
    data = io.BytesIO()
    document.save(data)
    assert [(block.number, block.text) for block in formats.docx(data.getvalue()).blocks] == [
        *((1, "| Key | Action |"), (1, "| --- | --- |"), (1, "| F5 | open the models \\| pull |")),  # empty row gone
        *((2, "| Name | Default |"), (2, "| --- | --- |"), (2, "| top_k | 5 |")),
        *((3, "| Q3 | 1200 |"), (3, "| Q4 | |")),  # no header: no column names
    ]


def test_markdown_title_headings_and_code_fences(folder):
    chunks = chunks_of(folder / "notes.md")
    assert [c.heading for c in chunks] == ["Field Notes › Animals", "Field Notes › Birds"]
    assert "# not a heading" in chunks[0].text  # a comment in a code block is no heading
    assert chunks[0].location == "lines 4-11"


def test_markdown_reads_as_rendered_without_comments_tags_or_where_links_point():
    text = "\n".join(
        [
            "# Timers",  # 1
            "<!-- YAML",
            "added: v0.9.1",
            "-->",
            "Call <strong>`clearTimeout()`</strong> to stop it.<!-- TODO: example -->",  # 5
            "Keep `<!-- this -->` and <kbd>Ctrl</kbd>+<kbd>C</kbd>, <anonymous> and a<b too.",
            "[`clearTimeout()`]: #cleartimeout",
            '[docs]: https://example.org/docs "The docs"',
            "[^1]: A footnote is text, its mark[^note] is not.",
            "[Note]: this line is text as well.",  # 10
            'Use [`clearTimeout()`][] or [the guide](https://x.org/a_(b) "Guide") and ![a heron](h.png).',
            "Keep `[not](a-link)` and - [x] ticked.",
            "```html",
            "<!-- shown in code -->",
            "[ref]: inside-code",
            "```",
            "## Thanks to[^thanks]",
        ]
    )
    parsed = formats.markdown(text)
    lines = [block.text for block in parsed.blocks]
    assert len(lines) == 17, "a line for each line: locations stay true"
    assert lines[1:4] == ["", "", ""]
    assert lines[4] == "Call `clearTimeout()` to stop it."
    assert lines[5] == "Keep `<!-- this -->` and Ctrl+C, <anonymous> and a<b too."
    assert lines[6:8] == ["", ""]
    assert lines[8:10] == ["A footnote is text, its mark is not.", "[Note]: this line is text as well."]
    assert lines[10:12] == ["Use `clearTimeout()` or the guide and a heron.", "Keep `[not](a-link)` and - [x] ticked."]
    assert lines[12:16] == ["```html", "<!-- shown in code -->", "[ref]: inside-code", "```"]
    assert parsed.blocks[-1].heading == "Thanks to"


def test_markdown_strong_emphasis_reads_as_its_text():
    text = "__Zstandard__, or zstd, is **very fast**; keep `**x**`, __init__, **kwargs and __main__.py."
    [block] = formats.markdown(text).blocks
    assert block.text == "Zstandard, or zstd, is very fast; keep `**x**`, __init__, **kwargs and __main__.py."


def test_strong_emphasis_a_line_break_splits_reads_as_its_text():
    text = "\n".join(
        [
            "**Never pass unsanitized user input to this function. Any input containing",
            "shell metacharacters may trigger arbitrary command execution.** Then 2 ** 31",
            "or 2**31 bytes, `a **b` and **kept",
            "",
            "in another paragraph**. A **last",
            "one**.",
        ]
    )
    lines = [block.text for block in formats.markdown(text).blocks]
    assert lines == [
        "Never pass unsanitized user input to this function. Any input containing",
        "shell metacharacters may trigger arbitrary command execution. Then 2 ** 31",
        "or 2**31 bytes, `a **b` and **kept",
        "",
        "in another paragraph**. A last",
        "one.",
    ]


def test_a_line_of_pictures_alone_is_a_figure_not_a_sentence():
    text = "\n".join(
        [
            "Esc stops a pull.",
            "![The models screen during a pull](images/models.png)",
            '[![PyPI](https://img.shields.io/p.svg)](https://pypi.org/p) ![CI](ci.svg "Build")',
            "Pulling again resumes it ![a spinner](s.gif).",
        ]
    )
    lines = [block.text for block in formats.markdown(text).blocks]
    assert lines == ["Esc stops a pull.", "", "", "Pulling again resumes it a spinner."]


def test_a_list_item_wrapped_over_lines_stays_one_line_of_its_passage():
    # Passages lose indentation, and a statement cut where an item's line wrapped at a
    # capital was quoted as evidence: 'Linux?" after "Which file holds ...'.
    markdown = (
        "Keys:\n\n"
        '- **Follow-ups.** A question such as "Where is that file on\n'
        '  Linux?" is read with the turns.\n'
        "- An item whose next line is lazy\n"
        "Goes on as Markdown renders it.\n"
        "  - a nested item\n\n"
        "A paragraph after the list.\n"
    )
    [chunk] = split(formats.markdown(markdown), ChunkOptions(100, 0))
    assert chunk.text.split("\n") == [
        "Keys:",
        '- Follow-ups. A question such as "Where is that file on Linux?" is read with the turns.',
        "- An item whose next line is lazy Goes on as Markdown renders it.",
        "- a nested item",
        "A paragraph after the list.",
    ]
    assert chunk.location == "lines 1-9"
    assert sentences(chunk.text)[0] == 'A question such as "Where is that file on Linux?" is read with the turns.'
    # Prose text and reStructuredText go on only where the line is indented under the item.
    text = "- Pears from the old orchard, picked\n  Monday.\n- Apples\nThe fruit above is ripe.\n"
    for read in (formats.text_file, formats.rst):
        [chunk] = split(read(text), ChunkOptions(100, 0))
        lines = ["- Pears from the old orchard, picked Monday.", "- Apples", "The fruit above is ripe."]
        assert chunk.text.split("\n") == lines


def test_a_markdown_comment_that_never_closes_hides_nothing():
    lines = [b.text for b in formats.markdown("Before <!-- a stray opener\nthe rest of the notes\n").blocks]
    assert lines == ["Before <!-- a stray opener", "the rest of the notes"]


def test_rst_sections(folder):
    chunks = chunks_of(folder / "guide.rst")
    assert [c.heading for c in chunks] == ["User Guide", "User Guide › Install"]
    # A section title and its underline title the passage, not glued to its first sentence.
    assert [c.text for c in chunks] == ["Intro text.", "A bumblebee installs it."]


def test_an_rst_files_metadata_is_not_shown_and_its_title_titles_it(tmp_path):
    # Sphinx shows no field list that comes before any other markup; the AWS CLI titles its topics there.
    topic = tmp_path / "return-codes.rst"
    topic.write_text(
        ":title: AWS CLI Return Codes\n:related command: s3,\n  s3 cp\n\nThe codes:\n\n* ``1`` -- a transfer failed.\n"
    )
    [chunk] = documents.passages(topic, topic.read_bytes(), ChunkOptions(100, 0))
    assert (chunk.heading, chunk.location) == ("AWS CLI Return Codes", "lines 5-7")
    assert chunk.text == "The codes:\n* `1` -- a transfer failed."
    # Its first section title is then a section's; a field list later on is text.
    topic.write_text(":title: AWS CLI Codes\n\nReturn codes\n============\n\n:Default: 0\n")
    [chunk] = documents.passages(topic, topic.read_bytes(), ChunkOptions(100, 0))
    assert (chunk.heading, chunk.text) == ("AWS CLI Codes › Return codes", ":Default: 0")


def test_a_text_file_titles_underlined_sections(tmp_path):
    path = tmp_path / "spec.txt"
    path.write_text(
        "Supporting rootless builds\n==========================\n\nStatus: stable\n\n"
        "Background\n----------\nPackages needed root.\n"
        "The last line of a paragraph.\n-----------------------------\nMore text.\n"
    )
    chunks = documents.passages(path, path.read_bytes(), ChunkOptions(100, 0))
    assert [c.heading for c in chunks] == ["Supporting rootless builds", "Supporting rootless builds › Background"]
    # The titles and their underlines are not glued to the text; a rule under a sentence is kept.
    assert chunks[0].text == "Status: stable"
    assert chunks[1].text.startswith("Packages needed root.\nThe last line of a paragraph.\n-----")


def test_a_text_file_titles_a_line_alone_after_a_rule_or_in_capitals(tmp_path):
    # Vim's help: a numbered title after a page-wide rule, its tags in stars; a subsection
    # in capitals. An indented line in capitals is an example, a shouted sentence no title.
    rule = "=" * 78
    path = tmp_path / "usr_32.txt"
    path.write_text(
        f"Vim provides undo.\n\n{rule}\n*32.1*\tUndo up to a file write\t\t*undo-write*\n\n"
        "Go back with this command: >\n\n\tCTRL-W +\n\n:earlier 1f\n\nTIME TRAVELLING\n\n"
        f"Go back by minutes.\n\nDO NOT PANIC.\n\nIt is kept.\n\n{rule}\n*32.2*\tNumbering changes\n\nEach counts.\n"
    )
    chunks = documents.passages(path, path.read_bytes(), ChunkOptions(100, 0))
    titles = ["", "32.1 Undo up to a file write", "TIME TRAVELLING", "32.2 Numbering changes"]
    assert [c.heading for c in chunks] == titles
    # The title and its rule are not read as text.
    assert chunks[0].text == "Vim provides undo."
    assert chunks[1].text.startswith("Go back with this command")
    assert "DO NOT PANIC." in chunks[2].text
    # Under an underlined title, the line after the underline is the section's text.
    spec = tmp_path / "spec.txt"
    spec.write_text(f"Install\n{rule}\nUsing pip\n\nRun it.\n")
    assert [c.heading for c in documents.passages(spec, spec.read_bytes(), ChunkOptions(100, 0))] == ["Install"]
    # A note's first line alone titles it, and is not quoted as the start of its first
    # sentence; code or a checksum there is text.
    note = tmp_path / "notes.txt"
    note.write_text("My S3 notes\n\nThe bucket is acme-backups.\n")
    [chunk] = documents.passages(note, note.read_bytes(), ChunkOptions(100, 0))
    assert (chunk.heading, chunk.text) == ("My S3 notes", "The bucket is acme-backups.")
    for first in ("cmake_minimum_required(VERSION 3.10)", "6b2fefb9"):
        note.write_text(f"{first}\n\nThe bucket is acme-backups.\n")
        assert [c.heading for c in documents.passages(note, note.read_bytes(), ChunkOptions(100, 0))] == [""]


def test_a_text_file_titles_a_line_alone_over_a_list(tmp_path):
    # A NEWS file's releases, each over its list of changes: every passage of a release's
    # list is titled by it. A lead-in that ends like a sentence or introduces the list,
    # an item's line, an indented line or a line that a paragraph runs on to is text.
    news = tmp_path / "NEWS"
    news.write_text(
        "tool 2.2 (2022-03-27)\n* image/jxl: new type\n* faster start\n\n"
        "tool 2.1 (2020-12-31)\n* image/heif: new type\n\nThe changes are:\n* none\n\n"
        "We changed these\nthings today.\n* none\n\n  indented line\n* none\n"
    )
    later = "* image/heif: new type\nThe changes are:\n* none\nWe changed these\nthings today.\n* none\nindented line\n* none"
    assert [(c.heading, c.text) for c in documents.passages(news, news.read_bytes(), ChunkOptions(100, 0))] == [
        ("tool 2.2 (2022-03-27)", "* image/jxl: new type\n* faster start"),
        ("tool 2.1 (2020-12-31)", later),
    ]


def test_a_vim_help_file_reads_as_vim_shows_it(tmp_path):
    # Its modeline makes it one: an example after ">" is fenced and closed by "<", a link
    # is its name and so is a tag that starts a line; a tag beside the text and a
    # highlight's "~" show nothing.
    help_text = (
        "*undo.txt*\tFor Vim version 9.0.\n\nTo undo, see |undo-commands|: >\n\tu\n\tCTRL-R\n"
        "<Then the text is back.\t\t\t*undo-back*\n\nthe tree ~\n\nGo on: >\n\n\t:later 1f\n\n"
        "The end.\n vim:tw=78:ts=8:noet:ft=help:norl:\n"
    )
    path = tmp_path / "undo.txt"
    path.write_text(help_text)
    [chunk] = documents.passages(path, path.read_bytes(), ChunkOptions(100, 0))
    assert chunk.text.split("\n") == [
        *("undo.txt For Vim version 9.0.", "To undo, see undo-commands:", "```", "u", "CTRL-R", "```"),
        *("Then the text is back.", "the tree", "Go on:", "```", ":later 1f", "```", "The end."),
    ]
    # Without the modeline, a text file's marks are its text.
    path.write_text(help_text.replace("ft=help", "ft=text"))
    [chunk] = documents.passages(path, path.read_bytes(), ChunkOptions(100, 0))
    assert "To undo, see |undo-commands|: >" in chunk.text.split("\n")


def _gzipped_page(path, page):
    """A manual page gzipped as Debian keeps it, and its passages."""
    path.write_bytes(gzip.compress(page.encode()))
    return path, documents.passages(path, path.read_bytes(), ChunkOptions(100, 0))


def test_a_manual_page_reads_as_man_shows_it(tmp_path):
    # troff with the man macros, gzipped as Debian keeps it: requests show only the text
    # they set in a font, headings head the passages, escapes print what they stand for.
    page = (
        '.\\" A comment, and the licence\n.TH BAK 1 "May 2024" "bak 2.1"\n.SH NAME\nbak \\- back up a folder\n'
        ".SH OPTIONS\n.TP\n\\fB\\-\\-exclude\\fR=\\fIPATTERN\\fR\nSkip files matching \\fIPATTERN\\fR, a\n"
        '.BR glob (7)\nwildcard.\\" not shown\n.IP \\(bu 2\nKeeps \\*(lq14\\*(rq copies.\n'
        ".de XX\nmacro body\n..\n.nf\nbak \\-\\-exclude '*.tmp' ~\n.fi\n"
        # A string the page defines: the first definition is the terminal's (Pod::Man's).
        '.ds C` ""\n.ds C` ``\nRun \\*(C`bak\\*(C` daily.\n'
    )
    path, chunks = _gzipped_page(tmp_path / "bak.1.gz", page)
    assert [(c.heading, c.location) for c in chunks] == [
        ("BAK(1) › NAME", "lines 3-4"),
        ("BAK(1) › OPTIONS", "lines 5-21"),
    ]
    assert chunks[0].text.split("\n") == ["NAME", "bak - back up a folder"]
    assert chunks[1].text.split("\n") == [
        *("OPTIONS", "--exclude=PATTERN:", "Skip files matching PATTERN, a", "glob(7)", "wildcard."),
        *('• Keeps "14" copies.', "```", "bak --exclude '*.tmp' ~", "```", 'Run "bak" daily.'),
    ]
    # A page named for its package's section too ("ca.1ssl"), which no other reader takes.
    ssl = tmp_path / "ca.1ssl"
    ssl.write_text(page)
    assert [c.text for c in documents.passages(ssl, ssl.read_bytes(), ChunkOptions(100, 0))] == [c.text for c in chunks]
    # Without its .TH it is no manual page: its text is read as written.
    path.write_bytes(gzip.compress(page.replace(".TH", ".XX").encode()))
    assert "\\fB\\-\\-exclude\\fR=\\fIPATTERN\\fR" in documents.passages(path, path.read_bytes())[0].text


def test_asciidoctors_manual_pages_are_read_with_their_terms(tmp_path):
    # Asciidoctor ends a macro's body with ".  ." inside a conditional: taken for more of
    # the body, the whole page was skipped ("no text found"). Its options are one-line
    # paragraphs with their description indented under them (.RS): each term ends with a
    # colon, as a tagged paragraph's tag does, so the description reads as what it defines.
    page = (
        '.TH "COLUMN" "1"\n.de URL\n\\fI\\$2\\fP\n..\n.if \\n[.g] \\{\\\n.  am URL\n.    ad l\n.  .\n.\\}\n'
        '.SH "OPTIONS"\n.sp\nAn example follows.\n.RS 4\ncolumn \\-t\n.RE\n'
        ".sp\n\\fB\\-t, \\-\\-table\\fP\n.RS 4\nCreate a table.\n.RE\n"
    )
    _, [chunk] = _gzipped_page(tmp_path / "column.1.gz", page)
    assert chunk.text.split("\n") == ["OPTIONS", "An example follows.", "column -t", "-t, --table:", "Create a table."]


def test_help2mans_options_are_read_with_their_terms(tmp_path):
    # help2man writes an option as a hanging paragraph (.HP) and what it does as an
    # untagged indented one (.IP) under it: the option is a term, as a .TP tag is. A
    # description's second .IP goes on in it, and an example after a heading is no term.
    page = (
        ".TH SED 1\n.SH OPTIONS\n.HP\n\\fB\\-i[SUFFIX]\\fR, \\fB\\-\\-in\\-place\\fR\n.IP\n"
        "edit files in place\n.HP\n\\fB\\-\\-posix\\fR\n.IP\nexit with the same status, even when the\n"
        ".IP\ncommand times out\n.SH EXAMPLE\n.PP\nsed \\-n p\n.SH MORE\n.IP\nAn indented paragraph.\n"
    )
    _, chunks = _gzipped_page(tmp_path / "sed.1.gz", page)
    assert [line for chunk in chunks for line in chunk.text.split("\n")] == [
        *("OPTIONS", "-i[SUFFIX], --in-place:", "edit files in place", "--posix:"),
        *("exit with the same status, even when the", "command times out", "EXAMPLE", "sed -n p"),
        *("MORE", "An indented paragraph."),
    ]


def test_a_bsd_manual_page_reads_as_man_shows_it(tmp_path):
    # The mdoc macros (OpenSSH's and tmux's pages): read as written, a page was its macros
    # (".It Fl A"). A macro line prints its words, flags with their dash, ".Op" in
    # brackets; a tagged list's item is its tag with a colon; bullets and numbers lead items.
    page = (
        '.\\" A comment\n.Dd $Mdocdate$\n.Dt BAK 1\n.Os\n.Sh NAME\n.Nm bak\n.Nd back up a folder\n'
        ".Sh SYNOPSIS\n.Nm\n.Op Fl v\n.Op Fl x Ar pattern\n.Sh DESCRIPTION\n.Nm\ncopies a folder, see\n.Xr rsync 1 .\n"
        ".Bl -tag -width Ds\n.It Fl v , Fl Fl verbose\nPrint each file\n.Pq not the default .\n"
        ".It Fl x Ar pattern\nSkip files matching\n.Ar pattern .\n.El\n"
        ".Bl -bullet\n.It\nKeeps 14 copies.\n.El\n.Bl -enum\n.It\nCopy.\n.It\nCheck.\n.El\n"
        ".Bd -literal\nbak -x '*.tmp' ~\n.Ed\n"
    )
    _, chunks = _gzipped_page(tmp_path / "bak.1.gz", page)
    assert [c.heading for c in chunks] == ["BAK(1) › NAME", "BAK(1) › SYNOPSIS", "BAK(1) › DESCRIPTION"]
    assert [c.text.split("\n") for c in chunks] == [
        ["NAME", "bak", "— back up a folder"],
        ["SYNOPSIS", "bak", "[-v]", "[-x pattern]"],
        [
            *("DESCRIPTION", "bak", "copies a folder, see", "rsync(1).", "-v, --verbose:", "Print each file"),
            *("(not the default).", "-x pattern:", "Skip files matching", "pattern.", "• Keeps 14 copies."),
            *("1. Copy.", "2. Check.", "```", "bak -x '*.tmp' ~", "```"),
        ],
    ]


def test_lines_are_numbered_as_an_editor_numbers_them():
    # A form feed (a page break of the GPL's or a ChangeLog's) is no line end; "\r\n" and "\r" are.
    for read in (formats.plain, formats.text_file, formats.markdown, formats.rst):
        blocks = read("Page one.\n\x0c\nPage two.\r\nThree.\rFour.\n").blocks
        assert [(b.number, b.text) for b in blocks if b.text.strip()] == [
            *((1, "Page one."), (3, "Page two.")),
            *((4, "Three."), (5, "Four.")),
        ]


def test_only_a_lone_top_title_titles_the_document(tmp_path):
    # A FAQ's sections adorned alike are siblings: the first titles none of the others.
    faq = tmp_path / "FAQ.txt"
    faq.write_text("1. Background\n-------------\nIt began in 2002.\n\n2. Building\n-----------\nRun make.\n")
    chunks = documents.passages(faq, faq.read_bytes(), ChunkOptions(100, 0))
    assert [c.heading for c in chunks] == ["1. Background", "2. Building"]
    # A file with no suffix is prose titled as a .txt is; a title as short as "If" is one.
    readme = tmp_path / "README"
    readme.write_text("If\n--\n\nIt branches.\n\nSynopsis\n~~~~~~~~\nif(<condition>)\n")
    chunks = documents.passages(readme, readme.read_bytes(), ChunkOptions(100, 0))
    assert [c.heading for c in chunks] == ["If", "If › Synopsis"]
    assert documents.read_as_markup(readme)
    # Nor is a version's digits a suffix: a licence named with its version is prose too.
    licence = tmp_path / "MPL-2.0"
    licence.write_text("Public License\n==============\n\n1. Definitions\n--------------\nWords.\n")
    chunks = documents.passages(licence, licence.read_bytes(), ChunkOptions(100, 0))
    assert [c.heading for c in chunks] == ["Public License › 1. Definitions"]
    assert documents.read_as_markup(licence)
    # Markdown: of two top-level headings, neither titles the file.
    notes = tmp_path / "notes.md"
    notes.write_text("# Monday\nRain.\n# Tuesday\nSun.\n")
    assert [c.heading for c in documents.passages(notes, notes.read_bytes(), ChunkOptions(100, 0))] == [
        "Monday",
        "Tuesday",
    ]


def test_a_notebook_reads_as_it_is_shown(tmp_path):
    cells = [
        {"cell_type": "markdown", "source": ["# Weather study\n", "\n", "We fit the **wombat** model."]},
        {
            "cell_type": "code",
            "source": ["fit = train(days)\n", "print(fit.score)"],
            "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["\x1b[1m0.93\x1b[0m\n"]},
                {"output_type": "stream", "name": "stderr", "text": ["UserWarning: slow\n"]},
                {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}},
            ],
        },
        {"cell_type": "markdown", "source": "## Logs"},
        {
            "cell_type": "code",
            "source": "run()",
            "outputs": [
                {"output_type": "execute_result", "data": {"text/plain": [f"epoch {n}\n" for n in range(50)]}},
                {"output_type": "error", "ename": "KeyError", "traceback": ["Traceback: boom"]},
            ],
        },
    ]
    path = tmp_path / "study.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"language": "python"}}}))
    chunks = documents.passages(path, path.read_bytes(), ChunkOptions(200, 0))
    assert [(c.heading, c.location) for c in chunks] == [
        ("Weather study", "cells 1-2"),
        ("Weather study › Logs", "cells 3-4"),
    ]
    assert chunks[0].text == (
        "# Weather study\nWe fit the wombat model.\n```python\nfit = train(days)\nprint(fit.score)\n```\n"
        "Output:\n```\n0.93\n```"
    )
    # A long output shows its start; a traceback, a warning and a picture are not read.
    logs = chunks[1].text
    assert "epoch 9\n…\n```" in logs and "epoch 10" not in logs
    assert not any(word in c.text for c in chunks for word in ("Warning", "Traceback", "Figure", "iVBOR"))


def test_a_notebook_that_is_no_json_is_skipped(tmp_path):
    path = tmp_path / "half.ipynb"
    path.write_text('{"cells": [{"cell_type": "mark')
    with pytest.raises(SkipFile, match="not a Jupyter notebook"):
        documents.passages(path, path.read_bytes())


def test_plain_text_has_no_heading_and_line_ranges(folder):
    [chunk] = chunks_of(folder / "script.py")
    assert chunk.heading == "" and chunk.location == "lines 1-2"
    assert chunk.text == "def echidna():\nreturn 'spiny'"


@pytest.mark.parametrize(
    "data, text",
    [
        ("café naïve déjà".encode("latin-1"), "café naïve déjà"),
        ("“smart” quotes – €5".encode("cp1252"), "“smart” quotes – €5"),
        ("UTF-16 with BOM".encode("utf-16"), "UTF-16 with BOM"),
        ("UTF-16 big-endian".encode("utf-16-be").join([b"\xfe\xff", b""]), "UTF-16 big-endian"),
        ("utf-8 with BOM ✓".encode("utf-8-sig"), "utf-8 with BOM ✓"),
        ("Привет, как дела? Это тест.".encode("cp1251"), "Привет, как дела? Это тест."),
    ],
)
def test_decodes_legacy_encodings(data, text):
    assert documents.decode(data) == text


def test_binary_is_refused():
    for data in (b"\x00\x01\x02text", bytes(range(1, 32)) * 100):
        with pytest.raises(SkipFile, match="binary"):
            documents.decode(data)


def test_minified_code_and_data_are_refused_and_long_prose_lines_are_not():
    bundle = "!function(e){" + ";".join(f"var a{i}=e.f({i},'x')" for i in range(400)) + "}();"
    for text in (bundle, f"// bundled\n{bundle}\n", '{"doc_urls":["a.html"],"index":' + "[1,2,3]," * 500 + "}"):
        with pytest.raises(SkipFile, match=r"minified code or data \(lines of up to [\d,]+ characters\)"):
            formats.plain(text)
    prose = " ".join(f"Herons wade in shallow water number {i}." for i in range(60))  # 2,400 characters
    record = f'{{"id": "1", "text": "{prose}"}}'
    assert [block.text for block in formats.plain(record + "\n").blocks] == [record]
    code = "\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(200))
    assert len(formats.plain(code).blocks) == 400


def test_passages_have_the_configured_size_and_overlap():
    text = "\n".join(" ".join(f"w{i * 10 + j}" for j in range(10)) for i in range(25))  # 250 words
    chunks = split(formats.plain(text), ChunkOptions(100, 20))
    assert [len(c.text.split()) for c in chunks] == [100, 100, 90]
    assert chunks[1].text.split()[:20] == chunks[0].text.split()[-20:]
    assert [c.location for c in chunks] == ["lines 1-10", "lines 9-18", "lines 17-25"]
    assert len(split(formats.plain(text), ChunkOptions(50, 0))) == 5


def test_a_passage_inside_a_table_holds_whole_rows_under_the_tables_header():
    rows = "\n".join(f"| F{i} | opens window number {i} of the app |" for i in range(1, 13))
    text = f"# Keys\n\nThe keys:\n\n| Key | Action |\n| --- | --- |\n{rows}\n\nThat is all."
    first, *rest = split(formats.markdown(text), ChunkOptions(40, 10))
    assert first.text.startswith("# Keys\nThe keys:\n| Key | Action |\n| --- | --- |\n| F1 |")
    assert len(rest) == 5 and all(c.text.startswith("| Key | Action |\n| --- | --- |\n| F") for c in rest)
    assert all(line.endswith("|") for c in [first, *rest[:-1]] for line in c.text.split("\n")[2:])  # rows whole
    assert [c.location for c in rest[:2]] == ["lines 8-10", "lines 10-12"]  # their own rows: the header is not moved
    assert rest[-1].text.endswith("| F12 | opens window number 12 of the app |\nThat is all.")
    # No table (no rule under a header), no change: the fixed steps of a plain text.
    assert split(formats.plain("| one two | three four |\nno rule"), ChunkOptions(3, 1))[1].text == "two | three"


def test_one_location_spans_two_passages_of_a_file():
    assert spanning("lines 3-9", "lines 8-20") == "lines 3-20"
    assert spanning("line 7", "line 7") == "line 7"
    assert spanning("paragraphs 2-4", "paragraph 5") == "paragraphs 2-5"
    assert spanning("lines 1-12, OCR", "lines 10-30, OCR") == "lines 1-30, OCR"
    assert spanning("p. 3", "p. 3") == "p. 3"  # pages: a passage never crosses one
    assert spanning("lines 1-4", "paragraph 2") == "lines 1-4"


def test_long_runs_count_as_several_words_and_stay_whole():
    url = "https://example.org/" + "x" * 200
    [chunk] = split(formats.plain(f"see {url} now"), ChunkOptions(100, 0))
    assert chunk.text == f"see {url} now"
    parts = split(formats.plain("y" * 240), ChunkOptions(5, 0))
    assert len(parts) == 2 and "".join(p.text for p in parts) == "y" * 240


def test_read_refuses_files_over_the_cap_before_reading(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("z" * 5000)
    with pytest.raises(SkipFile, match=r"too large: 4.9 KiB \(the limit is 1.0 KiB\)"):
        documents.read(FileEntry.of(path, path.stat()), 1024)


def test_a_file_changing_while_read_is_a_transient_skip(tmp_path, monkeypatch):
    path = tmp_path / "moving.txt"
    path.write_text("first version")
    entry = FileEntry.of(path, path.stat())
    real_fstat = os.fstat
    calls = []

    def fstat(fd):
        calls.append(fd)
        if len(calls) == 2:  # between the two stats of one read, the file grows
            path.write_text("second, longer version")
        return real_fstat(fd)

    monkeypatch.setattr(documents.os, "fstat", fstat)
    with pytest.raises(SkipFile, match="changed while being read") as caught:
        documents.read(entry)
    assert caught.value.transient


def test_a_vanished_file_is_a_transient_skip(tmp_path):
    path = tmp_path / "gone.txt"
    path.write_text("here")
    entry = FileEntry.of(path, path.stat())
    path.unlink()
    with pytest.raises(SkipFile, match="vanished") as caught:
        documents.read(entry)
    assert caught.value.transient


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file; the simulated case below covers it")
def test_an_unreadable_file_is_skipped(tmp_path):
    path = tmp_path / "locked.txt"
    path.write_text("secret")
    path.chmod(0)
    with pytest.raises(SkipFile, match="permission denied"):
        documents.read(FileEntry.of(path, path.stat()))


def test_an_unreadable_file_is_skipped_simulated(tmp_path, monkeypatch):
    path = tmp_path / "locked.txt"
    path.write_text("secret")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", refuse)
    with pytest.raises(SkipFile, match="permission denied") as caught:
        documents.read(FileEntry.of(path, path.stat()))
    assert not caught.value.transient


def test_a_parser_crash_becomes_a_skip(tmp_path, monkeypatch):
    path = tmp_path / "odd.md"
    path.write_text("# hello")

    def explode(text):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(documents._MARKUP, ".md", explode)
    with pytest.raises(SkipFile, match="cannot parse: RecursionError"):
        chunks_of(path)
