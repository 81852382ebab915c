"""LaTeX read as its typeset text."""

from __future__ import annotations

from iterretgen_tui.engine.indexing import documents
from iterretgen_tui.engine.indexing.chunking import ChunkOptions
from iterretgen_tui.engine.indexing.latex import latex

PAPER = r"""\documentclass{article}
\usepackage{amsmath}
% a comment about the draft
\title{Herons of the \emph{Lower} River}
\begin{document}
\maketitle
\begin{abstract}
We count \textbf{grey herons} at 12\% of sites~\cite{smith2020,lee}.
\end{abstract}
\section{Methods}\label{sec:methods}
Counts use $n_{\text{sites}} = \frac{a}{b}$ as in Section~\ref{sec:methods}. % check
\begin{itemize}
  \item Dawn counts, see \href{https://example.org}{the protocol}.
  \item[Dusk] counts with \texttt{count\_birds()}.
\end{itemize}
\subsection*{Code}
\begin{verbatim}
rate = 12% # not a comment
\end{verbatim}
``Quoted'' text -- a range.
\end{document}
after the end
"""


def test_latex_reads_as_typeset():
    parsed = latex(PAPER)
    assert parsed.title == "Herons of the Lower River"
    assert [(b.number, b.heading, b.text.strip()) for b in parsed.blocks] == [
        (8, "", "We count grey herons at 12% of sites [smith2020,lee]."),
        (11, "Methods", r"Counts use $n_{\text{sites}} = \frac{a}{b}$ as in Section [sec:methods]."),
        (13, "Methods", "- Dawn counts, see the protocol."),
        (14, "Methods", "- Dusk: counts with `count_birds()`."),
        (17, "Code", "```"),
        (18, "Code", "rate = 12% # not a comment"),
        (19, "Code", "```"),
        (20, "Code", "“Quoted” text – a range."),
    ]


def test_a_chapter_without_a_preamble_is_all_body(tmp_path):
    path = tmp_path / "chapter.tex"
    path.write_text("\\chapter{Kingfishers}\nA \\emph{kingfisher} dives.\n")
    [chunk] = documents.passages(path, path.read_bytes(), ChunkOptions(100, 0))
    assert (chunk.heading, chunk.text) == ("Kingfishers", "A kingfisher dives.")


def test_an_argument_wrapped_onto_the_next_line_is_read_whole():
    parsed = latex("\\section{\\module{httplib2}\n   A client library.}\n\\author{Joe}{joe@example.org}\n")
    assert [(b.number, b.heading, b.text.strip()) for b in parsed.blocks] == [
        (3, "httplib2 A client library.", "Joe joe@example.org")
    ]
