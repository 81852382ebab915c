"""Evidence sentences, question kinds, the follow-up for an unstated answer, and the
honesty verdict: the answer's pieces on their own, with fakes at the model boundary."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from iterretgen_tui.engine.indexing.indexer import open_folder_index, sync_folder
from iterretgen_tui.engine.loop.answers import content_words
from iterretgen_tui.engine.loop.events import FinalAnswer, IterationTrace, StopReason
from iterretgen_tui.engine.loop.evidence import (
    Evidence,
    backs,
    choose_evidence,
    definitions_first,
    option_command,
    sentences,
    statements,
)
from iterretgen_tui.engine.loop.follow_up import (
    LEAD,
    QUESTION,
    ask_for_answer,
    ask_outright,
    finished,
    go_on_to_answer,
)
from iterretgen_tui.engine.loop.prompts import build_prompt, demo_messages, stated_answer
from iterretgen_tui.engine.loop.question_kind import FACTOID, OPEN, question_kind
from iterretgen_tui.engine.loop.trust import Weakness, supported, unmentioned, unread_code, weakness
from iterretgen_tui.engine.passages import Passage

from .fakes import HashEmbedder, ScriptedGenerator

FOLDER = [  # a small hand-built folder: three files, a few statements each
    Passage(
        1,
        "# Settings\n\nThe app reads its settings from config.toml in the user config "
        "directory. Flags override the file.",
        "Settings",
        "docs/tui.md",
        "lines 1-4",
    ),
    Passage(2, "Bananas are yellow. They grow in bunches on large plants.", "Fruit", "docs/fruit.md"),
    Passage(
        3,
        "The adaptive stop ends the loop when two consecutive answers agree. "
        "It also stops when retrieval brings no new passage.",
        "Adaptive stop",
        "docs/how.md",
        "lines 9-12",
    ),
]


def test_sentences_skip_headings_and_cut_run_ons():
    assert sentences(FOLDER[0].text) == [
        "The app reads its settings from config.toml in the user config directory.",
        "Flags override the file.",
    ]
    wrapped = "The method returns the last portion\nof a path, like basename.\n\n* `:` for POSIX\n* `;` for Windows"
    assert sentences(wrapped) == [
        "The method returns the last portion of a path, like basename.",
        "• `:` for POSIX",
        "• `;` for Windows",
    ]
    under_heading = "## Windows vs. POSIX\nThe default operation varies by system.\n### Upgrading the global versions"
    assert sentences(under_heading) == ["The default operation varies by system."]
    code = "```js\nconst punycode = require('punycode');\n```\nPunycode is an encoding scheme."
    assert sentences(code) == ["const punycode = require('punycode');", "Punycode is an encoding scheme."]
    assert sentences("To run the file, enter:\n```bash\nnode hello.js\n```\nThe output appears below.") == [
        "To run the file, enter: node hello.js",
        "The output appears below.",
    ]
    # In a code block "# ..." is a comment, which says what the code does: it stays.
    commented = (
        "## Ports\nStart the server:\n```bash\n# start it in the background\ntool serve &\n```\nIt listens on 8731."
    )
    assert sentences(commented) == [
        "Start the server:",
        "# start it in the background\ntool serve &",
        "It listens on 8731.",
    ]
    run_on = " ".join(f"w{i}" for i in range(130))
    assert [len(s.split()) for s in sentences(run_on)] == [60, 60, 10]
    # A run-on's last two words are no statement of their own, but they are its end.
    assert sentences(" ".join(f"w{i}" for i in range(60)) + " with one. Next one here.")[0].endswith("w59 with one.")


def test_sentences_as_a_page_draws_them():
    # Node.js API docs as passages hold them (no blank lines): a parameter list, then the
    # paragraph; a quoted stability note; a quoted list.
    api = "* `path` {string}\n* Returns: {string}\nThe `path.dirname()` method returns the directory\nname of a `path`."
    assert sentences(api) == ["The `path.dirname()` method returns the directory name of a `path`."]
    note = (
        "> Stability: 2 - Stable\nThe module decodes buffers.\n> Features come in stages:\n> * 1.0 - Early development."
    )
    assert sentences(note) == [
        "Stability: 2 - Stable",
        "The module decodes buffers.",
        "Features come in stages:",
        "• 1.0 - Early development.",
    ]
    # An item whose line wraps goes on; so does a line that a lowercase line continues.
    wrapped = "* `timeout` {Timeout} A `Timeout` object as returned\nby `setInterval()`. Cancels the timer."
    assert sentences(wrapped) == [
        "• `timeout` {Timeout} A `Timeout` object as returned by `setInterval()`.",
        "Cancels the timer.",
    ]
    # A Markdown item wrapped at a capital goes on where the line is indented under it.
    indented = '- **Follow-ups.** Read with the turns: "Where is that file on\n  Linux?" is searched as meant.'
    assert sentences(indented) == [
        '• **Follow-ups.** Read with the turns: "Where is that file on Linux?" is searched as meant.'
    ]
    assert sentences("- Pears from the old orchard\nThe fruit above is ripe.") == [
        "• Pears from the old orchard",
        "The fruit above is ripe.",
    ]


def test_a_pdfs_bulleted_list_is_items_led_in_by_their_sentence():
    # A PDF's text layer draws bullets as "•"; run together, its list was one sentence.
    # Short items all go on the sentence that leads in: only the first did.
    types = "The parser can manage these types:\n• INTEGER;\n• BOOLEAN;\n• NULL;\nIt does not handle the REAL type."
    assert sentences(types) == [
        "The parser can manage these types: • INTEGER; • BOOLEAN; • NULL;",
        "It does not handle the REAL type.",
    ]
    steps = "Before you start:\n• Read the whole manual first.\n• Check the cable."
    assert statements(steps) == [
        ("Before you start:", None),
        ("• Read the whole manual first.", 1),
        ("• Check the cable.", 2),
    ]


def test_a_commands_options_are_statements_of_their_own():
    # A PDF lists options one to a line; run together, one option's meaning went to the
    # next. An option named inside a sentence goes on in it.
    listed = "Usage: asn1Decoding [OPTION]\nMandatory arguments are mandatory.\n-s, --strict use strict DER decoding\n-t, --no-time-strict do not check time fields"
    assert sentences(listed)[-2:] == [
        "-s, --strict use strict DER decoding",
        "-t, --no-time-strict do not check time fields",
    ]
    inline = "If it is combined with the\n-f\n(--file)\noption, every pattern is searched."
    assert sentences(inline) == ["If it is combined with the -f (--file) option, every pattern is searched."]
    # An option's sibling is no context for it, as a list item's is not; "-A" is an answer
    # that sentences mention (read as punctuation, it was the article).
    forwarding = "The options are as follows:\n-6:\nForces ssh to use IPv6 addresses only.\n-A:\nEnables forwarding of the agent."
    evidence = choose_evidence(
        "Which option forwards the agent?", [Passage(2, forwarding, "SSH", "ssh.1")], HashEmbedder(), answer="-A"
    )
    assert evidence.text == "-A: Enables forwarding of the agent."
    # Asked about an option by name, the quote is where the option is defined.
    usage = "The tool writes an array for the library.\nUsage: tool [OPTION] FILE\n-c, --check checks the syntax only\n-o, --output=FILE output file"
    evidence = choose_evidence(
        "What does the -c option of the tool do?", [Passage(3, usage, "Tool", "t.pdf")], HashEmbedder()
    )
    assert evidence.text == "Usage: tool [OPTION] FILE\n-c, --check checks the syntax only"  # its lead-in, no sibling
    # So is an option the answer states, where other sentences mention it too.
    table = (
        "--table-name name: which option makes a table name, with --table\n-t, --table:\nCreate a table of the columns."
    )
    asked = "Which option makes a table?", [Passage(4, table, "COLUMN", "column.1")], HashEmbedder()
    assert choose_evidence(*asked, answer="--table").text == "-t, --table: Create a table of the columns."
    # ... and where the answer only repeats the question, the option's own statement backs it,
    # not another page's sentence that names the command.
    pages = [Passage(5, "It waits for more data, as the\ntail -f\ncommand does.", "LESS", "less.1")]
    pages.append(Passage(6, "-f, --follow:\noutput appended data as the file grows", "TAIL", "tail.1"))
    evidence = choose_evidence("What does tail -f do?", pages, HashEmbedder(), answer="tail -f")
    assert evidence.text == "-f, --follow: output appended data as the file grows"
    # The question's option defined is said, however far the embedder scores the two.
    assert evidence.support > 1.0 > choose_evidence("What does tail do?", pages, HashEmbedder()).support
    # ... on a page whose title names the question's command: not rsync's -f on tail's page.
    assert choose_evidence("What does the rsync -f flag do?", pages, HashEmbedder()).support < 1.0
    # Where no page of the question's command read defines its option, the documents do
    # not say what it does (grounding.unsaid); a question that names no command is not judged.
    assert choose_evidence("What does the rsync -f flag do?", pages, HashEmbedder()).option_undefined
    assert not choose_evidence("What does tail -f do?", pages, HashEmbedder()).option_undefined
    assert not choose_evidence("What does the -f option do?", pages, HashEmbedder()).option_undefined
    assert not choose_evidence("What does tail do?", pages, HashEmbedder()).option_undefined
    # A passage titled by its file's name alone (a PDF's) says whose option it is in its text.
    manual = [
        Passage(
            7,
            "3.1 Invoking asn1Parser\nasn1Parser reads a file.\n-c, --check checks the syntax only",
            "lib.pdf",
            "/d/lib.pdf",
        )
    ]
    assert not choose_evidence("What does the -c option of asn1Parser do?", manual, HashEmbedder()).option_undefined
    assert choose_evidence("What does the -c option of asn1Coding do?", manual, HashEmbedder()).option_undefined
    # Judged only where the question says the command beside the option: a verb for it
    # ("making directories") names no page's title.
    assert option_command("What does the -r option of cp do?") == ("-r", "cp")
    assert option_command("What does asn1Decoding's -t do?") == ("-t", "asn1Decoding")
    assert option_command("What does -p do when making directories?") is None
    assert option_command("What does -c do?") is None
    mkdir = [Passage(9, "-p, --parents: make parent directories as needed", "MKDIR(1)", "/m/mkdir.1.gz")]
    assert not choose_evidence("What does -p do when making directories?", mkdir, HashEmbedder()).option_undefined
    # So does a section headed by the option (npm's docs: "#### `dry-run`").
    text = "Indicates that npm should only report what it would have done."
    headed = [Passage(8, text, "npm-publish › `dry-run`", "/d/npm-publish.md")]
    assert not choose_evidence(
        "What does the --dry-run flag of npm publish do?", headed, HashEmbedder()
    ).option_undefined
    assert choose_evidence("What does the --otp flag of npm publish do?", headed, HashEmbedder()).option_undefined
    # An option named after a tag's colon is not the one it defines.
    page = Passage(9, "", "cli › Options", "/d/cli.md")
    brk = "`--inspect-brk` flag: Unlike `--inspect`, it breaks."
    assert list(definitions_first("What does --inspect do?", [brk], [page])) == [0]
    assert list(definitions_first("What does -e do?", ["-e PATTERNS, --regexp=PATTERNS: use PATTERNS"], [page])) == [1]
    # Every sentence of a section headed by the option defines it, for the quote and the reading.
    otp = Passage(10, "", "npm-publish › `otp`", "/d/npm-publish.md")
    said = ["Default: null", "This is a one-time password from a two-factor authenticator."]
    assert list(definitions_first("What is the --otp option of npm publish for?", said, [otp, otp])) == [1, 1]
    assert list(definitions_first("What does --dry-run do?", said, [otp, otp])) == [0, 0]
    # A manual page's tag (its colon from manpage.py) leads its description, capitalised or not.
    tagged = "in a long listing, hide group names\n-h, --human-readable:\nwith -l, print sizes like 1K\n-i, --ignore-case:\nIgnore case distinctions."
    assert sentences(tagged) == [
        "in a long listing, hide group names",
        "-h, --human-readable: with -l, print sizes like 1K",
        "-i, --ignore-case: Ignore case distinctions.",
    ]


def test_a_code_blocks_lines_stay_lines_where_its_fences_are_known():
    built = "Build it with this command:\n```\n$ cargo build\nCompiling hello v0.1.0\n```\nThe binary is in target."
    assert sentences(built) == [
        "Build it with this command:",
        "$ cargo build\nCompiling hello v0.1.0",
        "The binary is in target.",
    ]
    passage = Passage(1, built, "Cargo", "c.md")
    quote = choose_evidence("How is it built?", [passage], HashEmbedder(dim=512), "this command")
    assert quote.text == "Build it with this command:\n$ cargo build\nCompiling hello v0.1.0"
    # Cut inside a block after a line that introduces it, the rest of the passage is code.
    assert sentences(built.split("```\nThe")[0]) == sentences(built)[:2]
    # A passage that starts inside a block has an unpaired fence that may close it: read as before.
    assert sentences("$ cargo build\nCompiling hello v0.1.0\n```\nThe binary is in target.")[0] == (
        "$ cargo build Compiling hello v0.1.0"
    )


def test_a_table_row_is_a_statement_that_names_its_columns():
    table = (
        "These binaries come with it:\n| Package manager | Binary names |\n| --- | :---: |\n"
        "| Yarn | `yarn`, `yarnpkg` |\n| pnpm | `pnpm` \\| `pnpx` |\nOthers are not provided."
    )
    assert sentences(table) == [
        "These binaries come with it:",
        "Package manager: Yarn; Binary names: `yarn`, `yarnpkg`",
        "Package manager: pnpm; Binary names: `pnpm` | `pnpx`",
        "Others are not provided.",
    ]
    # A passage that starts inside a table has no header to name the cells by.
    assert sentences("| Yarn | `yarn`, `yarnpkg` |\n| pnpm | `pnpm`, `pnpx` |") == [
        "Yarn; `yarn`, `yarnpkg`",
        "pnpm; `pnpm`, `pnpx`",
    ]


def test_a_sentence_is_scored_under_its_section_heading():
    # "The method returns ..." says which method only under its heading.
    dirname = Passage(1, "The method returns the directory name of a path.", "Path › path.dirname(path)", "path.md")
    basename = Passage(2, "The method returns the last portion of a path.", "Path › path.basename(path)", "path.md")
    for passages in ([dirname, basename], [basename, dirname]):
        evidence = choose_evidence("What does path.dirname() return?", passages, HashEmbedder(dim=512))
        assert evidence.text == dirname.text
    # A document's title alone (a Wikipedia paragraph's) is not added to its sentences.
    embedder = HashEmbedder(dim=512)
    choose_evidence("Who?", [Passage(3, "He was born in Dijon.", "Gustave Eiffel", "d")], embedder)
    assert embedder.calls[-1] == ["He was born in Dijon."]


def test_a_sentence_goes_on_past_a_title_or_an_initial():
    text = (
        "Mark Bowden was born in St. Louis, Missouri. He wrote for J. R. Knight! Craig v. Boren came first. "
        'An initial opens a quote ("J. M. Barrie") or a bracket (J. M. Barrie). '
        "The builder (i.e. whatever runs the rules) exposes a command, e.g. fakeroot. "
        "Hexadecimal notation as in C code, i. e. starting with 0x. Decimal notation is the default."
    )
    assert sentences(text) == [
        "Mark Bowden was born in St. Louis, Missouri.",
        "He wrote for J. R. Knight!",
        "Craig v. Boren came first.",
        'An initial opens a quote ("J. M. Barrie") or a bracket (J. M. Barrie).',
        "The builder (i.e. whatever runs the rules) exposes a command, e.g. fakeroot.",
        "Hexadecimal notation as in C code, i. e. starting with 0x.",
        "Decimal notation is the default.",
    ]


def test_the_evidence_is_the_sentence_closest_to_the_question_with_its_citation():
    evidence = choose_evidence("Where does the app read its settings from?", FOLDER, HashEmbedder(dim=512))
    assert evidence.text.startswith("The app reads its settings from config.toml")
    assert (evidence.n, evidence.passage_id, evidence.source, evidence.location) == (1, 1, "docs/tui.md", "lines 1-4")
    assert evidence.citation == "docs/tui.md (lines 1-4)"
    evidence = choose_evidence("When does the adaptive stop end the loop?", FOLDER, HashEmbedder(dim=512))
    assert evidence.n == 3 and "two consecutive answers agree" in evidence.text


def test_a_yes_or_no_is_quoted_from_the_sentence_its_draft_rests_on():
    passages = [
        Passage(1, "The specification proposes a standard way of getting the type of a file.", "Spec", "s.pdf"),
        Passage(2, "Many filesystems lack extended attributes, so no program may rely on them.", "Attrs", "s.pdf"),
    ]
    question = "Can an implementation rely on the type of a file being available?"
    draft = "Many filesystems lack extended attributes, so no program may rely on them. So the answer is no."
    assert choose_evidence(question, passages, HashEmbedder(dim=512)).n == 1  # the question alone
    evidence = choose_evidence(question, passages, HashEmbedder(dim=512), "no", draft=draft)
    assert evidence.n == 2
    # Where the support is concerned, the reasoning counts for nothing: a no is declined as before.
    assert evidence.support == choose_evidence(question, passages, HashEmbedder(dim=512), "no").support


def test_an_answer_that_only_a_heading_says_is_quoted_from_under_it():
    passages = [
        Passage(1, "The tool package contains the type database and its command.", "README", "README.md"),
        Passage(2, "* image/heif: new type\n* image/jxl: new type", "tool 2.2 (2022-03-27)", "NEWS"),
    ]
    question = "When was the tool release that added the image/jxl type out?"
    evidence = choose_evidence(question, passages, HashEmbedder(dim=512), "2022-03-27")
    assert (evidence.source, evidence.text) == ("NEWS", "• image/jxl: new type")


def test_a_sentence_whose_markup_glues_the_answer_to_a_word_still_backs_it():
    passages = [
        Passage(1, "The format of these generated files is explained below.", "Spec", "mime.pdf"),
        Passage(2, "A requirements file can be generated using {ref}pip freeze.", "Installs", "pip.md"),
    ]
    evidence = choose_evidence("Which command generates the file?", passages, HashEmbedder(dim=512), "pip freeze")
    assert evidence.source == "pip.md"
    assert backs("See {ref}pip freeze.", "pip freeze") and not backs("See pipfreeze.", "pip freeze")
    assert backs("Faiss is MIT-licensed.", "MIT")  # a dash joins words as well


def test_the_best_sentence_comes_with_its_closer_neighbour():
    text = "Bananas are yellow. Quit the app with Ctrl+Q. The app saves the conversation first. Pears are green."
    evidence = choose_evidence("How do I quit the app?", [Passage(7, text, "Keys", "k.md")], HashEmbedder(dim=512))
    assert evidence.text == "Quit the app with Ctrl+Q. The app saves the conversation first."
    alone = choose_evidence("quit?", [Passage(8, "Quit with Ctrl+Q.", "Keys", "k.md")], HashEmbedder())
    assert alone.text == "Quit with Ctrl+Q."
    # A sentence ending in a colon comes with what it introduces.
    text = "The survey data is kept in one file.\nTo open the survey data, run:\n```bash\npython survey.py --year 2026\n```"
    evidence = choose_evidence(
        "How do I open the survey data?", [Passage(9, text, "Data", "d.md")], HashEmbedder(dim=512)
    )
    assert evidence.text.endswith("To open the survey data, run: python survey.py --year 2026")


def test_a_list_item_keeps_its_own_line_in_the_quote():
    # The 1.5B over Node.js docs: the item's line ran on into the paragraph after it.
    text = "* Returns: {Timeout} a reference to `timeout`\nSets the timer's start time to the current time."
    evidence = choose_evidence("What does refresh do?", [Passage(3, text, "Timers", "t.md")], HashEmbedder())
    assert (
        evidence.text
        == "• Returns: {Timeout} a reference to `timeout`\nSets the timer's start time to the current time."
    )
    text = "Commands are short:\n* `cont`, `c`: Continue execution\n* `next`, `n`: Step next"
    evidence = choose_evidence("How to step next?", [Passage(4, text, "Debugger", "d.md")], HashEmbedder(dim=512))
    assert evidence.text == "• `next`, `n`: Step next"  # a sibling item is not its context
    # Nor is the last sentence of the item before, on that item's line.
    text = (
        "Present: Anna, Tom.\n- We switch to FiberCo in April. It costs 45 EUR a month, 10 less than now.\n"
        "- Anna cancels the old contract with NetPlus by 31 March.\n- Tom buys a router if needed."
    )
    assert [item for _, item in statements(text)] == [None, 1, 1, 2, 3]
    evidence = choose_evidence(
        "By when does Anna cancel the old contract?", [Passage(6, text, "Meeting", "m.md")], HashEmbedder()
    )
    assert evidence.text == "• Anna cancels the old contract with NetPlus by 31 March."
    # A table's row is an item of its own: the row beside it is not its context.
    text = "| API | Stability |\n| --- | --- |\n| Punycode | (0) Deprecated |\n| Query string | (2) Stable |"
    evidence = choose_evidence(
        "How stable is the Punycode API?", [Passage(5, text, "Stability", "s.md")], HashEmbedder(dim=512)
    )
    assert evidence.text == "API: Punycode; Stability: (0) Deprecated"
    # A definition's term ends in a colon (an HTML page's <dt>): its description, on the
    # next line, is the term's item, and the description before it another item's.
    text = "- gnats:\nThey had uid 41.\n- nobody:\nDaemons that own no files run as user nobody."
    assert statements(text) == [
        ("• gnats: They had uid 41.", 0),
        ("• nobody: Daemons that own no files run as user nobody.", 1),
    ]
    # An item whose sentence ends on a stop goes on as any sentence does.
    text = "* `label` {string} The display label.\nMaintains an internal counter for `label`."
    evidence = choose_evidence("What does count do?", [Passage(5, text, "Console", "c.md")], HashEmbedder())
    assert evidence.text == "• `label` {string} The display label. Maintains an internal counter for `label`."


def test_the_evidence_shows_where_a_stated_answer_comes_from():
    question = "When does the adaptive stop end the loop?"
    plain = choose_evidence(question, FOLDER, HashEmbedder(dim=512))
    assert "two consecutive answers agree" in plain.text
    backing = choose_evidence(question, FOLDER, HashEmbedder(dim=512), answer="when no new passage comes")
    assert backing.text == plain.text  # no sentence mentions it: as without an answer
    backing = choose_evidence(question, FOLDER, HashEmbedder(dim=512), answer="the user config directory")
    assert backing.n == 1 and "config.toml in the user config directory" in backing.text
    # "yes" has no content word to look for; "1" is not found inside "1832"
    assert choose_evidence(question, FOLDER, HashEmbedder(dim=512), answer="Yes.").text == plain.text
    years = [Passage(9, "The tower opened in 1889. Its builder was born in 1832.", "Tower", "t.md")]
    assert choose_evidence("When did it open?", years, HashEmbedder(), answer="1").text == (
        choose_evidence("When did it open?", years, HashEmbedder()).text
    )


def test_a_sentence_stated_as_the_answer_is_backed_by_one_holding_its_words_in_another_order():
    question = "What does the command do if the variable is already set?"
    passages = [
        Passage(
            1, "The command does what the variable says if the variable is already set to a value.", "set", "set.rst"
        ),
        Passage(2, "Where a cache variable was set already, the command does nothing.", "option", "option.rst"),
    ]
    answer = "The command does nothing if the variable is already set"
    assert choose_evidence(question, passages, HashEmbedder(dim=512)).source == "set.rst"  # nearest the question
    assert choose_evidence(question, passages, HashEmbedder(dim=512), answer=answer).source == "option.rst"
    # two words are a phrase, found in many sentences that do not back it
    assert choose_evidence(question, passages, HashEmbedder(dim=512), answer="set nothing").source == "set.rst"


def test_a_summary_no_sentence_backs_is_quoted_where_it_comes_from():
    question = "How do watchers work in the debugger?"
    passages = [
        Passage(1, "The debugger is a command-line utility. It works in the terminal.", "Debugger", "d.md"),
        Passage(
            2,
            "Expressions on the watch list are evaluated at every breakpoint and shown before the listing.",
            "Debugger › Watchers",
            "d.md",
        ),
    ]
    summary = "Watchers are expressions evaluated at every breakpoint and shown before the source listing [2]."
    assert choose_evidence(question, passages, HashEmbedder(dim=512)).n == 1  # nearest the question alone
    assert choose_evidence(question, passages, HashEmbedder(dim=512), answer=summary).n == 2
    # an answer of two words is no statement: the question alone chooses
    assert choose_evidence(question, passages, HashEmbedder(dim=512), answer="every listing").n == 1


def test_a_keyword_in_capitals_is_an_answer_to_look_for():
    # "only" is a function word, "@ONLY" a CMake option: the answer is looked for
    question = "Which option restricts the replacement of variables to the at-sign form?"
    passages = [
        Passage(1, "The replacement of variables in the form is done for every option.", "configure", "a.rst"),
        Passage(2, "`@ONLY` Restrict variable replacement to references of the form `@VAR@`.", "configure", "b.rst"),
    ]
    assert choose_evidence(question, passages, HashEmbedder(dim=512)).source == "a.rst"
    assert choose_evidence(question, passages, HashEmbedder(dim=512), answer="@ONLY").source == "b.rst"
    assert content_words("@ONLY") == {"only"} and content_words("YES") == content_words("it is on") == set()


TWO_HOPS = [  # musique's "What is the seat of the county where Van Hook Township is located?"
    Passage(1, "Van Hook Township is a township in Mountrail County. Its population was 42.", "Van Hook", "v.md"),
    Passage(
        2, "Stanley is home to the courthouse of Mountrail County. Its streets are wide.", "Stanley", "s.md", "line 3"
    ),
    Passage(3, "Bananas are yellow. They grow in bunches on large plants.", "Fruit", "f.md"),
]


def test_the_draft_adds_the_sentence_its_next_search_would_find():
    # The draft stated the bridge; the sentence closest to it with the question is the second hop.
    question = "What is the seat of the county where Van Hook Township is located?"
    draft = "Van Hook Township is located in Mountrail County. So the answer is Mountrail County."
    evidence = choose_evidence(question, TWO_HOPS, HashEmbedder(dim=512), "Mountrail County", draft=draft)
    assert evidence.n == 1 and evidence.text.startswith("Van Hook Township is a township in Mountrail County.")
    assert evidence.also is not None
    assert (evidence.also.text, evidence.also.n, evidence.also.passage_id) == (
        "Stanley is home to the courthouse of Mountrail County.",
        2,
        2,
    )
    assert evidence.also.citation == "s.md (line 3)"
    assert evidence.texts == [evidence.text, evidence.also.text]
    # Without a draft of content words there is nothing to search with: one quote.
    assert choose_evidence(question, TWO_HOPS, HashEmbedder(dim=512), "Mountrail County").also is None
    assert choose_evidence(question, TWO_HOPS, HashEmbedder(dim=512), draft="It is.").also is None
    # A sentence the quote already holds is not quoted again, even from a copy of its passage.
    copy = Passage(4, TWO_HOPS[0].text, "Van Hook", "copy/v.md")
    alone = [TWO_HOPS[0], copy]
    evidence = choose_evidence(question, alone, HashEmbedder(dim=512), "Mountrail County", draft=draft)
    assert evidence.also is None
    # A question, as an FAQ asks it, says nothing: the next sentence nearest the draft is quoted.
    faq = Passage(4, f"{question} Bananas grow on plants. Stanley is the seat.", "FAQ", "faq.md")
    evidence = choose_evidence(question, [TWO_HOPS[0], faq], HashEmbedder(dim=512), "Mountrail County", draft=draft)
    assert evidence.also is not None and evidence.also.text == "Stanley is the seat."
    # Nor does a line that only says its passage's title, as a contents page lists it.
    title = "Van Hook Township Mountrail County"
    contents = Passage(4, f"{title}:\n\nStanley is the seat.", title, "c.md")
    evidence = choose_evidence(
        question, [TWO_HOPS[0], contents], HashEmbedder(dim=512), "Mountrail County", draft=draft
    )
    assert evidence.also is not None and evidence.also.text == "Stanley is the seat."
    # A sentence that ends in a colon comes with what it introduces, as the first quote's does.
    notes = [
        Passage(1, "The app keeps notes in one folder. It reads them at start.", "Notes", "n.md"),
        Passage(2, "Indexing has costs:\n* a slow first start\nPears are green and sweet.", "Costs", "c.md"),
    ]
    draft = "Notes sit in one folder; indexing has costs."
    evidence = choose_evidence(
        "Where does the app keep notes?", notes, HashEmbedder(dim=512), "one folder", draft=draft
    )
    assert evidence.also.text == "Indexing has costs:\n• a slow first start"
    # The best of the rest, where nothing else bears on the draft, is no evidence: one quote.
    folder = [
        Passage(1, "Cafe opening hours: 8 to 18 on weekdays. Closed on Mondays in August.", "", "cafe.txt"),
        Passage(2, "Bake the lemon cake at 170 C for 45 minutes.", "", "recipes.txt"),
    ]
    draft = "The cafe is closed on Mondays in August. So the answer is Mondays in August."
    question = "When are the cafe's hours different?"
    evidence = choose_evidence(question, folder, HashEmbedder(dim=512), "Mondays in August", draft=draft)
    assert evidence.n == 1 and evidence.also is None


def test_a_row_beside_the_quoted_one_is_quoted_too_only_where_the_draft_names_what_it_holds():
    text = (
        "| Branch | Purpose | Owner |\n| --- | --- | --- |\n| main | released code | Ines |\n"
        "| next | integration of the coming release | Tomas |\n| hotfix | urgent fixes | on call |"
    )
    branches = [Passage(1, text, "Conventions", "c.docx")]
    question = "Which branch does Tomas own?"
    draft = "Tomas owns the branch next. So the answer is next."
    evidence = choose_evidence(question, branches, HashEmbedder(dim=64), "next", draft=draft)
    assert evidence.text == "Branch: next; Purpose: integration of the coming release; Owner: Tomas"
    assert evidence.also is None  # another branch's row says nothing the draft does
    # A draft that names another row's owner: that row is what the draft says too.
    draft = "Tomas owns next, and Ines owns main. So the answer is next."
    evidence = choose_evidence(question, branches, HashEmbedder(dim=64), "next", draft=draft)
    assert evidence.also is not None and evidence.also.text == "Branch: main; Purpose: released code; Owner: Ines"


def test_a_sentence_cut_by_the_passage_edges_is_made_whole_from_the_passages_beside_it():
    # The chunker's windows start and end mid-sentence, and the next one repeats a few words.
    before = "Bananas are yellow. To quit the app press"
    cut = "quit the app press Ctrl+Q at any time. The app saves the conversation first and then"
    after = "first and then closes every window. Pears are green."
    passage = Passage(2, cut, "Keys", "k.md", "lines 4-7")
    around = {2: (Passage(1, before, "Keys", "k.md", "lines 1-4"), Passage(3, after, "Keys", "k.md", "line 7"))}
    evidence = choose_evidence("How do I quit the app?", [passage], HashEmbedder(dim=512), around=around.__getitem__)
    assert evidence.text == (
        "To quit the app press Ctrl+Q at any time. The app saves the conversation first and then closes every window."
    )
    assert evidence.location == "lines 1-7"  # where the whole sentence is
    assert choose_evidence("How do I quit the app?", [passage], HashEmbedder(dim=512)).text == cut  # no neighbours

    # Passages of another section do not continue this one: nothing is taken from them.
    other = {2: (Passage(1, "A heading of its own", "", "k.md"), Passage(3, "Something else entirely.", "", "k.md"))}
    unmended = choose_evidence("How do I quit the app?", [passage], HashEmbedder(dim=512), around=other.__getitem__)
    assert (unmended.text, unmended.location) == (cut, "lines 4-7")
    # A passage that begins and ends with its sentences takes nothing either.
    whole = Passage(3, "Quit the app with Ctrl+Q. It saves first.", "Keys", "k.md")
    around = {3: (Passage(2, "The keys are few. Quit the app", "", "k.md"), None)}.__getitem__
    assert choose_evidence("quit?", [whole], HashEmbedder(), around=around).text == whole.text
    # A cut sentence that runs on for long takes its last MAX_MENDED words, marked as cut.
    long_before = "Intro. " + " ".join(f"w{i}" for i in range(50)) + " quit the app press"
    around = {2: (Passage(1, long_before, "", "k.md"), None)}.__getitem__
    mended = choose_evidence("How do I quit the app?", [passage], HashEmbedder(dim=512), around=around).text
    assert mended.startswith("… w20 w21") and mended.split()[31:33] == ["quit", "the"]
    # A code block's edge stops what is taken, language tag and all.
    fenced = "Use it like this:\n```js\nconst app = quit the app press"
    around = {2: (Passage(1, fenced, "", "k.md"), None)}.__getitem__
    mended = choose_evidence("How do I quit the app?", [passage], HashEmbedder(dim=512), around=around).text
    assert mended.startswith("const app = quit the app press Ctrl+Q")
    # A list item's line does not run on into a passage that starts a sentence of its own.
    item = "* Returns: {Timeout} a reference to `timeout`\nSets the timer's start time"
    starts = Passage(2, "Sets the timer's start time to now. It reschedules the timer.", "Timers", "t.md")
    around = {2: (Passage(1, item, "Timers", "t.md"), None)}.__getitem__
    assert choose_evidence("What does refresh do?", [starts], HashEmbedder(), around=around).text == starts.text
    # Nor does an item cut at a passage's end take the paragraph after it.
    ends_in_item = Passage(1, "Timers are objects. They are reused.\n* Returns: {Timeout} a", "Timers", "t.md")
    around = {1: (None, Passage(2, "Returns: {Timeout} a reference\nSets the timer's start time.", "", "t.md"))}
    quoted = choose_evidence("What does it return?", [ends_in_item], HashEmbedder(), around=around.__getitem__)
    assert quoted.text.endswith("• Returns: {Timeout} a reference")
    # Cut inside the item's line, it is mended as any sentence is.
    mid = Passage(2, "Timer that fires once a second. It is reused.", "Timers", "t.md")
    around = {2: (Passage(1, "* Returns: a reference to the Timer that fires", "Timers", "t.md"), None)}.__getitem__
    mended = choose_evidence("What does it return?", [mid], HashEmbedder(), around=around).text
    assert mended.startswith("• Returns: a reference to the Timer that fires once a second.")


def test_a_folder_index_gives_the_passages_beside_one_in_its_file(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    # 19 words a sentence, 100-word passages that step by 80: the second begins inside sentence 5.
    lines = [
        f"Ledger {n} lists the ships that docked in the harbour of the town during the spring of year {1900 + n}."
        for n in range(1, 13)
    ]
    (folder / "a.md").write_text(" ".join(lines), "utf-8")
    (folder / "b.md").write_text("Pears are green. " * 3, "utf-8")
    embedder = HashEmbedder()
    index = open_folder_index(folder, embedder)
    sync_folder(folder, index, embedder)
    by_file: dict[str, list[Passage]] = {}
    for passage in sorted(index.passages(range(1, 50)), key=lambda p: p.id):
        by_file.setdefault(Path(passage.source).name, []).append(passage)
    a, b = by_file["a.md"], by_file["b.md"]
    assert len(a) >= 3
    assert index.around(a[1].id) == (a[0], a[2])
    assert index.around(a[0].id)[0] is None and index.around(a[-1].id)[1] is None  # not b.md's
    assert index.around(b[0].id) == (None, None)
    # The second passage begins inside a sentence, and its evidence comes out whole.
    assert a[1].text.startswith("ships that docked in the harbour of the town during the spring of year 1905. Ledger 6")
    evidence = choose_evidence("Which ships docked in the spring of 1905?", [a[1]], embedder, around=index.around)
    assert evidence.text.startswith(lines[4])


def test_no_sentences_no_evidence():
    assert choose_evidence("anything?", [Passage(1, "# Title", "T", "t.md")], HashEmbedder()) is None
    assert choose_evidence("anything?", [], HashEmbedder()) is None


def test_question_kinds():
    for open_question in (
        "How does the adaptive stop decide when to stop iterating?",
        "Why is greedy decoding the default?",
        "Summarise the release notes",
        "What did we decide about the release?",
        "Explain the stability index.",
        "Describe raw mode.",
        "What is a safe room?",  # a definition: a name cannot answer it
        "What are tax-deferred savings?",
    ):
        assert question_kind(open_question) == OPEN, open_question
    for factoid in (
        "Which file holds the settings?",
        "How many passages are retrieved?",
        "Who designed the tower?",
        "When was it built?",
        "How long is the delay?",
        "What is querystring.decode() an alias for?",
        "What is the capital of Hungary?",  # a relation, not a definition
        "What is the default port used by the server?",
    ):
        assert question_kind(factoid) == FACTOID, factoid


def test_open_questions_get_numbered_passages_and_cited_demos():
    messages = demo_messages(OPEN)
    assert "[n]" in messages[0]["content"]
    assert all("[1]" in m["content"] for m in messages[1:])
    prompt = build_prompt(
        "How does it stop?", FOLDER[2:], count_tokens=lambda t: len(t.split()), budget=2000, kind=OPEN
    )
    assert "[1] Title: Adaptive stop Context:" in prompt.messages[-1]["content"]
    assert prompt.messages[-1]["content"].endswith("citing [n].")
    # The factoid prompt keeps the paper's layout.
    factoid = build_prompt("When?", FOLDER[2:], count_tokens=lambda t: len(t.split()), budget=2000)
    assert "\nTitle: Adaptive stop Context:" in factoid.messages[-1]["content"]


def test_an_open_answer_is_not_cut_at_its_first_sentence():
    from iterretgen_tui.engine.loop.prompts import answer_end

    assert answer_end("Answer: It stops when answers agree [1]. ") is not None
    assert answer_end("Answer: It stops when answers agree [1]. ", OPEN) is None


def test_stated_answer_of_either_kind():
    assert stated_answer("Reasoning. So the answer is Dijon.") == "Dijon"
    assert stated_answer("Reasoning without a conclusion.") == ""
    assert stated_answer("Answer: It stops when answers agree [1].", OPEN) == "It stops when answers agree [1]."
    assert stated_answer("It stops when answers agree [1].", OPEN) == "It stops when answers agree [1]."
    assert stated_answer("  ", OPEN) == ""


def test_an_unstated_answer_is_asked_for_in_a_follow_up_turn():
    generator = ScriptedGenerator(["The answer is: Dijon.\nBecause he was born there."])
    messages = [{"role": "user", "content": "Where?"}]
    answer = ask_for_answer(generator, messages, "He was born in a city.", threading.Event())
    assert answer == "Dijon"
    assert generator.prompts[0][-2:] == [
        {"role": "assistant", "content": "He was born in a city."},
        {"role": "user", "content": QUESTION},
    ]
    assert len(generator.prompts) == 1  # stated when asked: the draft is not made to go on


def test_a_draft_that_states_nothing_when_asked_goes_on_to_its_answer():
    # SmolLM2 reads our follow-up back; made to go on from its own draft, it states one.
    generator = ScriptedGenerator(["Reply with the answer only.", "Dijon. He was born there."])
    messages = [{"role": "user", "content": "Where?"}]
    answer = ask_for_answer(generator, messages, "He was born in a city.", threading.Event())
    assert answer == "Dijon"
    assert generator.prompts[1] == [*messages, {"role": "assistant", "content": f"He was born in a city. {LEAD}"}]
    assert go_on_to_answer(ScriptedGenerator([""]), [], "", threading.Event()) == ""
    # An answer copied from a demo is none, asked outright or gone on to.
    demos = [
        {"role": "user", "content": "Who was born first, Ada Lovelace or Charles Babbage?"},
        {"role": "assistant", "content": "So the answer is Charles Babbage."},
        {"role": "user", "content": "Punycode: users should switch to Punycode.js. What should they switch to?"},
    ]
    draft = "Users should switch to the userland Punycode.js module."
    leaky = ScriptedGenerator(["Charles Babbage", "Charles Babbage."])
    assert ask_for_answer(leaky, demos, draft, threading.Event()) == ""
    assert len(leaky.prompts) == 2
    read = ScriptedGenerator(["Punycode.js"])
    assert ask_for_answer(read, demos, draft, threading.Event()) == "Punycode.js"
    assert go_on_to_answer(ScriptedGenerator(["the the the the the the"]), [], "A draft.", threading.Event()) == ""


def test_a_draft_cut_inside_a_sentence_goes_on_from_its_last_whole_one():
    # SmolLM2 on musique: the loop guard cut "... in Shrek 2 is" where it began again, and
    # going on from there looped once more.
    messages = [{"role": "user", "content": "Whose spouse?"}]
    generator = ScriptedGenerator([" Adrian Edmondson."])
    draft = "She voiced the fairy godmother. The spouse of the actress who played her is"
    assert go_on_to_answer(generator, messages, draft, threading.Event()) == "Adrian Edmondson"
    assert generator.prompts[0][-1] == {"role": "assistant", "content": f"She voiced the fairy godmother. {LEAD}"}
    generator = ScriptedGenerator([" Lana Wood."])
    go_on_to_answer(generator, messages, "The sibling of the actress is", threading.Event())
    assert generator.prompts[0][-1] == {"role": "assistant", "content": LEAD}
    # Finished sentences stay whole, abbreviations and closing quotes included.
    assert finished("Born in St. Louis. He was") == "Born in St. Louis."
    assert finished('He said "yes."') == 'He said "yes."'
    assert finished("Dr. Smith is") == ""


def test_a_follow_up_answer_of_one_long_sentence_is_read_to_its_end():
    # The 1.5B answers "what does X do?" in a sentence; 24 tokens had cut it at "... to call its".
    sentence = (
        "The refresh function sets the timer's start time to the current time, and reschedules the timer "
        "to call its callback at the previously specified duration adjusted to the current time."
    )
    assert len(sentence.split()) > 24
    answer = ask_outright(ScriptedGenerator([sentence + "\nMore."]), [], "A draft.", threading.Event())
    assert answer == sentence.rstrip(".")
    # A reply that stutters is not read on to the limit.
    looping = ScriptedGenerator(["The answer is: " * 30])
    assert ask_outright(looping, [], "A draft.", threading.Event()) == ""
    assert looping.tokens_emitted < 24


def test_a_follow_up_that_puts_the_answer_under_its_label_is_read():
    # SmolLM2's own replies in an eval: the label, a blank line, then the answer.
    for reply in ("The answer is:\n\nCaroline Wozniacki\nShe was born in 1990.", "Answer:\nCaroline Wozniacki"):
        answer = ask_outright(ScriptedGenerator([reply]), [], "A draft.", threading.Event())
        assert answer == "Caroline Wozniacki"
    assert ask_outright(ScriptedGenerator(["The answer is:"]), [], "A draft.", threading.Event()) == ""
    # Replies that loop in a few words (seen with SmolLM2) state no answer.
    for reply in (
        "The answer is: The answer is: The answer is: The answer",
        "Benson Context: Benson Context: Benson Context: Benson",
    ):
        assert ask_outright(ScriptedGenerator([reply]), [], "A draft.", threading.Event()) == ""
    assert ask_outright(ScriptedGenerator(["Answering that: Dijon"]), [], "A draft.", threading.Event()) == (
        "Answering that: Dijon"
    )


def test_a_follow_up_that_repeats_the_question_states_nothing():
    # SmolLM2's replies in an eval (hotpotqa): our own instruction read back as the answer.
    for reply in ("Reply with the answer only.", 'In a few words, the answer is "In a few words, the answer is "In a'):
        assert ask_outright(ScriptedGenerator([reply]), [], "A draft.", threading.Event()) == ""
    for reply, answer in (("Yes.", "Yes"), ("Only Fools and Horses", "Only Fools and Horses")):
        assert ask_outright(ScriptedGenerator([reply]), [], "A draft.", threading.Event()) == answer


def final_with(answer: str, *, stated: bool = True, looped: bool = False) -> FinalAnswer:
    trace = IterationTrace(1, "q", tuple(FOLDER), "draft", answer, 1.0, stated=stated, looped=looped)
    return FinalAnswer("q", answer, "draft", tuple(FOLDER), StopReason.MAX_ITERATIONS, (trace,), 1)


def test_weak_answers_are_named():
    assert weakness(final_with("config.toml")) is None
    assert weakness(final_with("the user config directory")) is None
    assert weakness(final_with("", stated=False)) is Weakness.NO_ANSWER
    assert weakness(final_with("config.toml", looped=True)) is Weakness.LOOPED
    assert weakness(final_with("Grenoble")) is Weakness.UNSUPPORTED
    assert weakness(final_with("yes")) is None  # nothing to check it against
    # A table's cells glue their words: "Ada" is in "Ada,maintainer,2019".
    assert supported("Ada", ["name,role,since Ada,maintainer,2019"]) and not supported("Bob", ["Ada,maintainer"])
    assert supported("config.toml", ["saved to config.toml"])
    assert supported("MIT", ["Faiss is MIT-licensed."]) and supported("MIT-licensed", ["Faiss is MIT-licensed."])


def test_a_factoid_stating_a_number_no_passage_holds_is_unsupported():
    passages = ["The server listens on port 8000 by default.", "Timeouts are 30 s (`timeout`)."]
    assert supported("port 8000", passages, "Which port does it use?")
    assert not supported("port 8080", passages, "Which port does it use?")
    assert supported("port 8080", passages, "Is it port 8080?")  # the user's own number
    assert supported("8,000 or 30", ["8000", "30"], "")
    assert supported("localhost:8000", ["Open http://localhost:8000/ in a browser."], "")
    assert not supported("port 8000", ["The port is 18000."], "")
    # A dot is part of its number: "pypdf 3.1.0" holds no Python 3.10.
    assert not supported("Python 3.10 and above", ["pypdf 3.1.0 and above include improvements."], "")
    assert supported("Python 3.10 and above [1]", ["Requires-Python: >=3.10"], "")
    assert supported("port 8080", passages)  # an open reply's numbers ("[1]", "two") are not checked
    assert weakness(final_with("config.toml, port 8080")) is Weakness.UNSUPPORTED


def test_a_factoid_naming_a_key_the_evidence_does_not_quote_is_unsupported():
    keys = "| Key | Action |\n| Ctrl+Q | quit |\n| Ctrl+R | reload |"
    line = "A running backup stops when you press Esc in the jobs list."
    question = "Can I stop a backup in the jobs list?"
    assert not supported("Yes, by pressing Ctrl+Q", [keys, line], question, [line])
    assert supported("Yes, by pressing Esc", [keys, line], question, [line])
    assert supported("Yes, with Ctrl+Q", [keys, line], question, [keys])  # the quote holds it
    assert supported("Yes: CTRL-q, then Enter", [keys], question)  # written otherwise, as any passage
    assert supported("Reload with control + R", ["Reload with Ctrl+R."], "Is it Ctrl+R?")  # written otherwise
    assert supported("No: Ctrl+Q quits", [keys, line])  # an open reply's keys are not checked


def test_an_answer_about_a_name_no_passage_read_mentions_is_unsupported():
    question = "Which Rust compilers does CMake support?"
    read = ["CMake 3.19 supports version ranges.", "See node.js, the U.S. office and McDonald's guides."]
    assert unmentioned(question, "Rust compiler versions 3.19 or later", read) == ["rust"]
    assert unmentioned(question, "3.19 or later", read) == []  # the answer says nothing of Rust
    # a word of "node.js"; "U.S." without its dots; a possessive's owner
    assert unmentioned("Do Node and the US use McDonald's data?", "Node and the US use McDonald's", read) == []
    assert unmentioned("Is it in Trust?", "Trust has it", ["Rust is a language."]) == ["trust"]
    # A name joined by hyphens, as written or as a passage may write it apart.
    plugins = ["Copy the plugin file to the plugin directory."]
    assert unmentioned("How do I install plugins with vim-plug?", "With vim-plug, copy it", plugins) == ["vim-plug"]
    assert unmentioned("Can I make it read-only?", "Yes, read-only", ["Open it read only."]) == []
    # A name code gives, joined by dots or underscores: a member no passage read names.
    paths = ["path.join() joins the worker_threads paths."]
    assert unmentioned("What does path.copy() do?", "`path.copy()` copies a path", paths) == ["path.copy"]
    assert unmentioned("What does path.join() do?", "path.join() joins paths", paths) == []
    assert unmentioned("Is worker_threads named?", "worker_threads is", paths) == []
    final = replace(final_with("config.toml, the Rust file"), question="Which file holds the Rust settings?")
    assert weakness(final) is Weakness.UNSUPPORTED  # no passage of FOLDER says Rust
    assert weakness(replace(final, answer="config.toml")) is None


def test_an_answer_naming_code_no_passage_read_holds_is_unsupported():
    read = ["Start the server with --port 8080.", "Clean it with npm cache clean -f.", "path.basename(path[, suffix])"]
    assert unread_code("Tune it with the --gc option", read) == {"--gc"}
    assert unread_code("Pass --port and -f; a well-known, built-in flag", read) == set()
    assert unread_code("Run it with --gc", ["Does rustc take --gc?", *read]) == set()  # the question's own
    # code or a literal none of whose words is read; an apostrophe quotes nothing
    assert unread_code("Call enableNetConnect with the string 'http3'", read) == {"http3"}
    assert unread_code('Set `gcMode` to "off"', read) == {"gcMode", "off"}
    assert unread_code("Use `path.basename('/a/b.html')`, the user's and the group's", read) == set()
    assert unread_code('Run `npm cache clean` with "-f"', read) == set()
    assert unread_code("It returns `'.'`, from the last `.` on", read) == set()
    final = final_with("config.toml, with --settings-file")  # no passage of FOLDER holds the option
    assert weakness(final) is Weakness.UNSUPPORTED
    assert weakness(replace(final, answer="config.toml, with `kafka.yaml`")) is Weakness.UNSUPPORTED
    assert weakness(replace(final, answer="config.toml")) is None


def test_a_number_the_evidence_does_not_quote_is_unsupported():
    # Asked for a phone number, the 1.5B gave a server's port from another passage read,
    # beside evidence on the person that holds no number.
    people = Passage(1, "Alice owns the backup job; Bob owns the mail server.", "", "notes.md")
    ports = Passage(2, "Start the server with --port 8080.", "Served models", "models.md")
    passages = (people, ports)

    def with_evidence(answer: str, quoted: Passage) -> FinalAnswer:
        final = final_with(answer)
        n = passages.index(quoted) + 1
        evidence = Evidence(quoted.text, n, quoted.id, quoted.source, support=0.7)
        return replace(final, sources=passages, evidence=evidence, question="What is Alice's phone number?")

    assert weakness(with_evidence("her phone number is 8080 [1]", people)) is Weakness.UNSUPPORTED
    assert weakness(with_evidence("port 8080 [2]", ports)) is None
    # Its [n] marks are citations, not numbers it states.
    assert weakness(with_evidence("Alice [1]", people)) is None
    assert weakness(replace(with_evidence("8080", people), evidence=None)) is None  # no evidence: any passage


def test_support_is_how_near_any_sentence_comes_to_the_question_or_its_answer():
    text = "Bananas are yellow. F5 lists the installed models in a window of its own."
    passages = [Passage(4, text, "Keys", "k.md"), Passage(5, "Pears are green.", "Fruit", "f.md")]
    embedder = HashEmbedder(dim=512)
    asked = choose_evidence("What does F5 open?", passages, embedder)
    vectors = embedder.embed_batch([*sentences(text), "Pears are green."])
    best = float(max(vectors @ embedder.embed_queries(["What does F5 open?"])[0]))
    assert asked.support == pytest.approx(best)
    # The stated answer's words, found in a sentence, bring it nearer.
    answered = choose_evidence("What does F5 open?", passages, embedder, answer="the installed models window")
    assert answered.support > asked.support
    assert answered.support >= answered.score
    # An answer that only restates the question ("F5") is backed by the draft's reasoning.
    draft = "F5 lists the installed models in a window of its own. So the answer is F5."
    restated = choose_evidence("What does F5 open?", passages, embedder, answer="F5")
    reasoned = choose_evidence("What does F5 open?", passages, embedder, answer="F5", draft=draft)
    assert reasoned.support > restated.support


def test_a_follow_up_pointing_back_as_typed_is_supported_by_its_context_too():
    # "Can I stop a pull there?" alone says nothing of the window; read after "What does
    # the models window list?" it is nearer. The quote is still chosen by the question alone.
    text = "F5 opens it. Esc stops a pull in the models window."
    passages = [Passage(1, text, "Models", "tui.md")]
    embedder = HashEmbedder(dim=512)
    alone = choose_evidence("Can I stop a pull there?", passages, embedder)
    context = "What does the models window list?\nCan I stop a pull there?"
    read = choose_evidence("Can I stop a pull there?", passages, embedder, context=context)
    vectors = embedder.embed_batch(sentences(text))
    assert read.support == pytest.approx(
        float(max((vectors @ embedder.embed_queries([context]).T).max(), alone.support))
    )
    assert read.support > alone.support
    assert (read.text, read.score) == (alone.text, alone.score)
