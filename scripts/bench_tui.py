#!/usr/bin/env python
"""The chat window's token rate against raw llama-cpp-python, printed as JSON.

The real app runs headless (Textual's test driver) with the real session and models over
the repository's docs; the session's generator is wrapped to timestamp every token as
the app's worker receives it, while the UI renders. Raw llama-cpp-python then generates
the same number of tokens from the same messages. Runs alternate, medians are reported.
Also: time from app start to its first frame, and from pressing Enter to the first token
of iteration 1, alternating on the same loaded model: "before", the window as
it was when the issue was filed (half the cores, the demos evaluated in the session's
first question); "half", half the cores with the demos' saved states; "all", the default
(all the cores while nothing is indexing, saved states).
Goals: window >= 0.95x raw; first token now <= 0.6x before.
Usage: scripts/bench_tui.py [--repeats 3] [--folder docs]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import replace
from pathlib import Path

from bench_common import print_report

from iterretgen_tui.commands.tui import make_session
from iterretgen_tui.config import Settings
from iterretgen_tui.engine.cores import half_the_cores
from iterretgen_tui.engine.machine import usable_cores
from iterretgen_tui.ui.app import ChatApp

QUESTION = "What does the adaptive stop do?"


def rate(stamps: list[float]) -> float:
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0


class Recorder:
    """Wraps the session's generator: records the messages and token arrival times."""

    def __init__(self) -> None:
        self.session = None
        self.messages = None
        self.stamps: list[float] = []

    def factory(self, settings):
        self.session = make_session(settings)
        return self.session

    def wrap(self) -> None:
        generator = self.session.generator
        original = generator.stream

        def stream(messages, **kwargs):
            self.messages, self.stamps = list(messages), []
            for piece in original(messages, **kwargs):
                self.stamps.append(time.perf_counter())
                yield piece

        generator.stream = stream


async def measure(recorder: Recorder, settings: Settings, folder: Path, repeats: int):
    """Alternates: an answer in the window, then raw generation of as many tokens from
    the same messages while the window idles."""
    app = ChatApp(settings, folder, recorder.factory)
    started = time.perf_counter()
    app_rates, raw_rates, tokens = [], [], []
    async with app.run_test(size=(180, 50)) as pilot:
        first_frame = time.perf_counter() - started
        while not app.ready.is_set():
            await pilot.pause(0.1)
        recorder.wrap()
        generator = recorder.session.generator
        generator.cores = None  # the threads are set here, per answer
        prefixes = generator.prefixes
        # mode -> (threads, the demos' saved states in use)
        modes = {"before": (half_the_cores(), False), "half": (half_the_cores(), True), "all": (usable_cores(), True)}
        first_token = {mode: [] for mode in modes}
        for n in range(repeats):
            for mode in list(modes) if n % 2 == 0 else list(modes)[::-1]:
                threads, saved = modes[mode]
                generator.set_threads(threads)
                generator.prefixes = prefixes if saved else []
                generator.reset()
                app.query_one("#question").value = QUESTION
                submitted = time.perf_counter()
                await pilot.press("enter")
                await pilot.pause(0.5)
                while app.current is None or not app.current.done:
                    await pilot.pause(0.05)
                await pilot.pause(0.5)  # the final render finishes before raw runs block the loop
                first_token[mode].append(recorder.stamps[0] - submitted)
                app_rates.append(rate(recorder.stamps))
                tokens.append(len(recorder.stamps))
                raw_rates.append(raw_rate(generator, recorder.messages, tokens[-1]))
    return first_frame, app_rates, raw_rates, tokens, modes, first_token


def raw_rate(generator, messages, tokens: int) -> float:
    generator.reset()
    chunks = generator._llm.create_chat_completion(
        messages=messages, max_tokens=tokens, temperature=0.0, top_k=1, stream=True
    )
    return rate([time.perf_counter() for c in chunks if c["choices"][0]["delta"].get("content")])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = parser.parse_args()
    # One iteration, fixed length: the rate, not the method, is measured here.
    settings = replace(Settings(), device="cpu", iterations=1, adaptive=False, max_tokens=96)
    first_frame, app_rates, raw_rates, tokens, modes, first_token = asyncio.run(
        measure(Recorder(), settings, args.folder, args.repeats)
    )
    med = statistics.median
    print_report(
        {
            "first_frame_s": round(first_frame, 3),
            "tokens_per_answer": tokens,
            "app_tokens_per_s": [round(r, 1) for r in app_rates],
            "raw_tokens_per_s": [round(r, 1) for r in raw_rates],
            "app_over_raw_median": round(med(app_rates) / med(raw_rates), 3),
            "threads_and_saved_demos": modes,
            "first_token_of_iteration_1_s": {mode: [round(s, 3) for s in runs] for mode, runs in first_token.items()},
            "first_token_all_over_half_median": round(med(first_token["all"]) / med(first_token["half"]), 3),
            "first_token_all_over_before_median": round(med(first_token["all"]) / med(first_token["before"]), 3),
        }
    )


if __name__ == "__main__":
    main()
