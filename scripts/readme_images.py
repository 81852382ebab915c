"""The README's and docs/tui.md's pictures of the window, from the snapshot tests' SVGs.

The pictures are what the snapshot tests assert the window looks like, so they cannot
drift from the app: after an intended change, update the snapshots
(`pytest tests/test_tui_snapshots.py --snapshot-update`), look at them, then run this.
Needs cairosvg (`pip install cairosvg`, which needs the cairo library).

    python scripts/readme_images.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "tests" / "__snapshots__" / "test_tui_snapshots"
IMAGES = ROOT / "docs" / "images"
PICTURES = {  # snapshot test -> picture
    "test_welcome_with_the_demo_model": "welcome.png",
    "test_panes_mark_new_again_kept_and_a_changed_source": "answer-marks.png",
    "test_models_screen_while_a_pull_runs": "models.png",
}
# Textual's SVGs name Fira Code, fetched from the web by a browser; cairo reads only
# installed fonts, so a monospace one that is installed nearly everywhere takes its place.
FONT = "DejaVu Sans Mono"


def main() -> int:
    try:
        import cairosvg
    except ImportError:
        print("needs cairosvg: pip install cairosvg", file=sys.stderr)
        return 1
    IMAGES.mkdir(parents=True, exist_ok=True)
    for test, picture in PICTURES.items():
        svg = (SNAPSHOTS / f"{test}.svg").read_text("utf-8")
        svg = re.sub(r'"?Fira Code"?', f'"{FONT}"', svg)
        cairosvg.svg2png(bytestring=svg.encode(), write_to=str(IMAGES / picture), output_width=1600)
        print(IMAGES / picture)
    return 0


if __name__ == "__main__":
    sys.exit(main())
