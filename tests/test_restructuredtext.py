"""reStructuredText read as Sphinx shows it, line for line."""

from __future__ import annotations

from iterretgen_tui.engine.indexing import formats
from iterretgen_tui.engine.indexing.restructuredtext import shown

PAGE = """\
.. _install-guide:

.. only:: html

  .. contents::
     :local:

Build the project first.

.. code-block:: cmake
   :caption: CMakeLists.txt

   add_executable(app main.c)

.. versionadded:: 3.11
  Sources may be added later with :command:`target_sources`.

.. note:: Paths are relative to :variable:`CMAKE_SOURCE_DIR`.

.. a comment that spans
   two lines and shows nothing

For example::

    cmake --build build

.. function:: configure(path, *, strict=False)

   Reads ``path``; see :ref:`the install guide <install-guide>` and :class:`~pkg.io.Reader`.

.. toctree::

   first
   second

See `the manual <https://example.org/manual>`_ or :ref:`rules of variable
evaluation <variables>` for more.
.. code-block:: sh

   make
"""


def test_directives_and_roles_read_as_sphinx_shows_them():
    lines = PAGE.splitlines()
    out = shown(lines)
    assert len(out) == len(lines)  # line numbers stay true
    text = [line.strip() for line in "\n".join(out).splitlines() if line.strip()]
    assert text == [
        "Build the project first.",
        "```",
        "add_executable(app main.c)",
        "```",
        "New in version 3.11:",
        "Sources may be added later with `target_sources`.",
        "Note: Paths are relative to `CMAKE_SOURCE_DIR`.",
        "For example:",
        "```",
        "cmake --build build",
        "```",
        "configure(path, *, strict=False)",
        "Reads `path`; see the install guide and `Reader`.",
        "See the manual or rules of variable",
        "evaluation for more.",
        "```",
        "make",
        "```",  # no blank line after the last block: its fence rides on its last line
    ]


def test_code_is_left_as_written():
    lines = ["Run it::", "", "    echo ``x`` :role:`y`", "", "Then ``done``."]
    assert shown(lines) == ["Run it:", "```", "    echo ``x`` :role:`y`", "```", "Then `done`."]


def test_a_literal_block_marker_on_its_own_or_after_a_space_shows_no_colon():
    assert shown(["Example ::", "", "   code"])[0] == "Example"
    assert shown(["Text.", "", "::", "", "   code"])[2] == ""


def test_rst_passages_keep_their_section_and_fence_their_code(tmp_path):
    page = "Commands\n========\n\n" + PAGE
    parsed = formats.rst(page)
    assert parsed.title == "Commands"
    fences = [b for b in parsed.blocks if b.text == "```"]
    assert len(fences) == 6 and fences[-1].number == fences[-2].number + 2
    assert not any(".." in b.text or ":ref:" in b.text for b in parsed.blocks)
