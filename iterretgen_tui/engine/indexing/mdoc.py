"""BSD manual pages (troff with the mdoc macros: OpenSSH's `ssh.1` and `ssh_config.5`,
`tmux.1`, `file.1`) as `man` shows their text, one line for one, so line numbers stay true.

Read as plain text, a page was its macros: ".It Fl A" for ssh's -A, ".Op Fl c Ar
shell-command" for tmux's -c, and keyword search could not match "-A". Here a macro line
shows what it prints: ".Fl A" is "-A", ".Ar file" "file", ".Xr gzip 1" "gzip(1)", ".Op"
encloses the rest of its line in brackets, ".Ns" joins its neighbours; a tagged list's
".It" shows its tag with a colon, as manpage.py ends a tagged paragraph's, so that the
description under it reads as what it defines; a bulleted or numbered list's items start
with "• " or their number; ".Sh" and ".Ss" head the passages; a literal display
(".Bd -literal") is fenced as code. Escapes print as in the man macros (manpage.text).
"""

from __future__ import annotations

import re

from .manpage import arguments, led, term, text

_FIRST_LINES = 200
_DD = re.compile(r"^[.']\s*Dd(?:\s|$)")
_MACRO = re.compile(r"^[.']\s*(\S+)\s*(.*)$")
_HEADINGS = {"Sh": 2, "Ss": 3}
# Macros whose arguments are words set in a font or named: their words as written.
_WORDS = frozenset("Ad An Ar Cd Cm Dv Em Er Ev Fa Ft Ic Li Lk Ms Mt No Pa Sy Tn Va".split())
# Macros that print their arguments but only open a line: in one, their name is a word.
_LINE_ONLY = frozenset({"Dl", "D1", "Nd"})
_NAMES = {
    "Ux": "UNIX",
    "Bx": "BSD",
    "Ox": "OpenBSD",
    "Nx": "NetBSD",
    "Fx": "FreeBSD",
    "Dx": "DragonFly",
    "At": "AT&T UNIX",
}
# Macros that enclose the rest of their line, and pairs that open and close an enclosure.
_ENCLOSE = {"Op": "[]", "Bq": "[]", "Pq": "()", "Dq": '""', "Qq": '""', "Sq": "''", "Ql": "''", "Aq": "<>", "Brq": "{}"}
_OPENS = {"Oo": "[", "Bo": "[", "Po": "(", "Do": '"', "Qo": '"', "So": "'", "Ao": "<", "Bro": "{"}
_CLOSES = {"Oc": "]", "Bc": "]", "Pc": ")", "Dc": '"', "Qc": '"', "Sc": "'", "Ac": ">", "Brc": "}"}
# Every macro a line may call after its first: a word that is one is a macro, not text.
_CALLABLE = (
    _WORDS
    | frozenset(_NAMES)
    | frozenset(_ENCLOSE)
    | frozenset(_OPENS)
    | frozenset(_CLOSES)
    | frozenset({"Fl", "Xr", "Nm", "Ns", "Ta", "Fn", "St", "Pf", "Sx", "Eo", "Ec"})
)
_CLOSING = frozenset({".", ",", ":", ";", ")", "]", "?", "!"})  # delimiters set against the word before
_OPENING = frozenset({"(", "["})  # and against the word after
_BULLETED = frozenset({"-bullet", "-dash", "-hyphen"})


def is_mdoc(lines: list[str]) -> bool:
    """A page of the mdoc macros: its .Dd among its first lines."""
    return any(_DD.match(line) for line in lines[:_FIRST_LINES])


def shown(lines: list[str]) -> tuple[list[str], dict[int, tuple[int, str]], str]:
    """Each line as shown ("" where nothing shows; a literal display between ``` fences),
    the headings by line index (level, text), and the page's title, "NAME(section)" as .Dt
    gives them."""
    out = [""] * len(lines)
    headings: dict[int, tuple[int, str]] = {}
    title, name, lead = "", "", ""
    lists: list[list] = []  # each open list: its type, and the number of its last item
    displays: list[bool] = []  # each open display: whether it is fenced
    for i, line in enumerate(lines):
        macro = _MACRO.match(line)
        if macro is None:  # a text line
            out[i], lead = led(lead, text(line))
            continue
        request, args = macro[1], [text(a) for a in arguments(macro[2])]
        if request == "Dt" and args:
            title = f"{args[0]}({args[1]})" if len(args) > 1 else args[0]
        elif request in _HEADINGS and args:
            out[i] = " ".join(args)
            headings[i] = (_HEADINGS[request], out[i])
        elif request == "Nm" and args and not name:
            name = args[0]
            out[i] = _printed(request, args, name)
        elif request == "Bl":
            lists.append([next((a for a in args if a.startswith("-") and a != "-compact"), "-tag"), 0])
        elif request == "El" and lists:
            lists.pop()
        elif request == "It":
            kind = lists[-1][0] if lists else "-tag"
            if kind in _BULLETED:
                lead = "• "
            elif kind == "-enum":
                lists[-1][1] += 1
                lead = f"{lists[-1][1]}. "
            else:
                item = _printed("It", args, name)
                if item.strip():
                    out[i] = f"{lead}{item}" if kind == "-column" else term(item)
                    lead = ""
        elif request == "Bd":
            displays.append("-literal" in args or "-unfilled" in args)
            out[i] = "```" if displays[-1] else ""
        elif request == "Ed" and displays:
            out[i] = "```" if displays.pop() else ""
        elif _prints(request):
            out[i], lead = led(lead, _printed(request, args, name))
    return out, headings, title


def _prints(request: str) -> bool:
    """A macro that prints (a reference's "%T" its title too); others print nothing here."""
    return request in _CALLABLE or request in _LINE_ONLY or request.startswith("%")


def _printed(request: str, args: list[str], name: str) -> str:
    """What a macro line prints: ``request`` with its arguments, the macros it calls too."""
    words = _render([request, *args] if request != "It" else args, name)
    return _spaced(words)


def _render(tokens: list[str], name: str) -> list[str]:
    """The words a run of macros and their arguments prints, delimiters kept as words of
    their own for ``_spaced``; "\\x00" marks where ".Ns" joins two words."""
    words: list[str] = []
    k = 0
    while k < len(tokens):
        token = tokens[k]
        k += 1
        if not _prints(token):
            words.append(token)
            continue
        rest_start = k
        while k < len(tokens) and tokens[k] not in _CALLABLE:
            k += 1
        own = tokens[rest_start:k]  # its arguments, up to the next macro it calls
        if token in _ENCLOSE:  # the rest of the line, its closing delimiters outside
            inner = tokens[rest_start:]
            trailing = []
            while inner and inner[-1] in _CLOSING:
                trailing.insert(0, inner.pop())
            opening, closing = _ENCLOSE[token]
            words += [opening + "\x01", *_render(inner, name), "\x01" + closing, *trailing]
            k = len(tokens)
        elif token in _OPENS:
            words += [_OPENS[token] + "\x01", *own]
        elif token in _CLOSES:
            words += ["\x01" + _CLOSES[token], *own]
        elif token == "Fl":
            flags = [w for w in own if w not in _CLOSING]
            words += [f"-{w}" for w in flags] or ["-", "\x00"]  # ".Fl Fl verbose" is "--verbose"
            words += [w for w in own if w in _CLOSING]
        elif token == "Xr":
            words += [f"{own[0]}({own[1]})", *own[2:]] if len(own) > 1 else own
        elif token == "Nm":
            words += own if own and own[0] not in _CLOSING else [name, *own]
        elif token == "Fn" and own:
            words += [f"{own[0]}({', '.join(w for w in own[1:] if w not in _CLOSING)})"]
            words += [w for w in own[1:] if w in _CLOSING]
        elif token == "Nd":
            words += ["—", *own]
        elif token == "Ns":
            words += ["\x00", *own]
        elif token == "Ta":
            words += ["\t", *own]
        elif token in _NAMES:
            words += [_NAMES[token], *own]
        else:  # a word in a font, a standard's name, a section named: its words
            words += own
    return words


def _spaced(words: list[str]) -> str:
    """The words with a space between, but none before a closing delimiter, after an
    opening one, around a join (".Ns") or inside an enclosure's marks."""
    shown = ""
    glue = True
    for word in words:
        if word == "\x00":
            glue = True
            continue
        if word == "\t":
            shown, glue = shown + "\t", True
            continue
        opens = word.endswith("\x01")
        closes = word.startswith("\x01")
        word = word.replace("\x01", "")
        if not (glue or closes or word in _CLOSING):
            shown += " "
        shown += word
        glue = opens or word in _OPENING
    return shown.strip()
