"""The served reader (engine/loop/served.py): against llama-cpp-python's own server running the
embedded GGUF, whose greedy drafts must be the in-process reader's; and against a small
stand-in server for the failures a real one does not show on demand."""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from iterretgen_tui import config, models
from iterretgen_tui.cli import settings_from
from iterretgen_tui.commands.ask import add_parser
from iterretgen_tui.engine.errors import IterRetGenError, ReaderServerError
from iterretgen_tui.engine.loop.generator import LlamaGenerator
from iterretgen_tui.engine.loop.prompts import build_prompt
from iterretgen_tui.engine.loop.served import ServedGenerator, base_url, estimated_tokens, first_model
from iterretgen_tui.engine.passages import Passage
from iterretgen_tui.session import Session

from .llama_server import ServerDidNotStart, free_port, llama_cpp_server
from .tui_support import make_app, pilot_test, wait_for

GGUF = models.resolve_llm(models.EMBEDDED_LLM)
PASSAGES = [
    Passage(1, "The Eiffel Tower in Paris was built by the company of Gustave Eiffel between 1887 and 1889.", "Eiffel Tower", "a.md"),
    Passage(2, "Alexandre Gustave Eiffel, the French civil engineer, was born in Dijon on 15 December 1832.", "Gustave Eiffel", "b.md"),
    Passage(3, "Dijon is a city in eastern France, famous for its mustard.", "Dijon", "c.md"),
    Passage(4, "A banana is an elongated, edible fruit.", "Bananas", "d.md"),
]  # fmt: skip
QUESTIONS = [
    "In which city was the engineer who built the Eiffel Tower born?",
    "When was the Eiffel Tower built?",
    "What is Dijon famous for?",
    "Is a banana a fruit or a vegetable?",
]
COUNTED = ["Iterative retrieval helps.", "Gustave Eiffel was born on 15 December 1832.", "naïve café, 東京 ✓", ""]


# ---- llama-cpp-python's server with the embedded GGUF -------------------------------------


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    try:
        import llama_cpp.server.app  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"llama-cpp-python's server extra is not installed ({exc}): pip install -e '.[test]'")
    # One thread for the prompt too, as the in-process reader below: on a busy CPU a second
    # spinning thread makes the server many times slower, never different.
    try:
        with llama_cpp_server(GGUF, n_ctx=2048, threads=1) as url:
            yield url
    except ServerDidNotStart as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def served(served_url) -> ServedGenerator:
    return ServedGenerator(served_url, str(GGUF), n_ctx=2048)


@pytest.fixture(scope="module")
def in_process() -> LlamaGenerator:
    return LlamaGenerator(GGUF, n_ctx=2048, device="cpu", n_threads=1)


def test_the_first_listed_model_is_the_reader_by_default(served_url):
    model = first_model(served_url + "/v1/")  # with or without /v1 and a trailing slash
    reader = ServedGenerator(served_url + "/v1", model)
    assert model == str(GGUF)  # llama-cpp-python's server lists the GGUF's path
    assert reader.name == GGUF.stem and reader.device == "server"
    assert reader.identity == f"served:{served_url}:{GGUF}"
    assert reader.n_ctx == 4096  # it does not tell its context: the configured one holds


def test_streams_text_in_pieces(served):
    messages = [{"role": "user", "content": "Name three colours."}]
    pieces = list(served.stream(messages, max_tokens=16, cancel=threading.Event()))
    assert len(pieces) > 3 and "".join(pieces).strip()


def test_greedy_drafts_are_the_in_process_readers(served, in_process):
    for question in QUESTIONS:
        prompt = build_prompt(question, PASSAGES, count_tokens=in_process.count_tokens, budget=1500)
        here = "".join(in_process.stream(prompt.messages, max_tokens=32, cancel=threading.Event()))
        there = "".join(served.stream(prompt.messages, max_tokens=32, cancel=threading.Event()))
        assert there == here and here.strip(), question


def test_counts_tokens_as_the_in_process_reader(served, in_process):
    assert [served.count_tokens(text) for text in COUNTED] == [in_process.count_tokens(text) for text in COUNTED]
    text = " ".join(p.text for p in PASSAGES) + " 0123456789 (x) => {y: [1, 2]}; 東京タワー"
    assert estimated_tokens(text) >= in_process.count_tokens(text)  # the fallback never counts short


def test_cancel_stops_the_stream_and_the_next_request_works(served):
    messages = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    cancel = threading.Event()
    pieces = []
    for piece in served.stream(messages, max_tokens=400, cancel=cancel):
        pieces.append(piece)
        if len(pieces) == 3:
            cancel.set()
            cancelled = time.monotonic()
    assert len(pieces) == 3 and time.monotonic() - cancelled < 2
    started = time.monotonic()
    again = "".join(served.stream([{"role": "user", "content": "Say hello."}], max_tokens=8, cancel=threading.Event()))
    # The server stopped the story when the connection closed, or this would wait for it.
    assert again.strip() and time.monotonic() - started < 20


def test_a_model_the_server_does_not_list_is_refused(served_url):
    # llama-cpp-python's server answers any name with the model it holds: refused here instead.
    with pytest.raises(ReaderServerError, match=r"serves no model 'qwen2.5:7b' \(it lists: .*SmolLM2"):
        ServedGenerator(served_url, "qwen2.5:7b")


def test_a_reply_begun_is_answered_in_a_new_turn_by_llama_cpp_python(served, in_process):
    # Its server renders every message list for a new reply: the one known cost (docs/models.md).
    asked = [{"role": "user", "content": "Count from one to ten in words, separated by commas."}]
    begun = [*asked, {"role": "assistant", "content": "one, two, three, four,"}]
    there = "".join(served.stream(begun, max_tokens=8, cancel=threading.Event()))
    assert "".join(in_process.stream(begun, max_tokens=8, cancel=threading.Event())).startswith(" five")
    assert not there.startswith(" five")


# ---- a stand-in server for the failures ---------------------------------------------------


def event(payload: dict | str) -> bytes:
    return b"data: " + (payload if isinstance(payload, str) else json.dumps(payload)).encode() + b"\n\n"


def piece(text: str) -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


DONE = event("[DONE]")
Route = Callable[["Handler", "dict | None"], None]


class Handler(BaseHTTPRequestHandler):
    server: StandIn

    def do_GET(self) -> None:
        self.route(None)

    def do_POST(self) -> None:
        self.route(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))

    def route(self, body: dict | None) -> None:
        self.server.requests.append((self.path, body, dict(self.headers)))
        answer = self.server.routes.get(self.path)
        if answer is None:
            self.reply(404, b'{"detail": "Not Found"}')
        else:
            answer(self, body)

    def reply(self, status: int, data: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, *chunks: bytes, then_wait: float = 0.0) -> None:
        """Events as they come (HTTP/1.0: the stream ends when the connection closes)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        time.sleep(then_wait)

    def log_message(self, *args) -> None:
        pass


class StandIn(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, routes: dict[str, Route]) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.routes = {"/v1/models": lambda h, _: h.reply(200, b'{"data": [{"id": "tiny"}]}'), **routes}
        self.requests: list[tuple[str, dict | None, dict]] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def stand_in() -> Iterator[Callable[..., StandIn]]:
    started: list[StandIn] = []

    def start(routes: dict[str, Route] | None = None) -> StandIn:
        server = StandIn(routes or {})
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def chat(route: Route) -> dict[str, Route]:
    return {"/v1/chat/completions": route}


def read(reader: ServedGenerator, messages=None) -> str:
    messages = messages or [{"role": "user", "content": "Who built the Eiffel Tower?"}]
    return "".join(reader.stream(messages, max_tokens=16, cancel=threading.Event()))


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text and isinstance(error.value, IterRetGenError)
    return text


def test_a_server_that_is_down_is_one_clear_line():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(ReaderServerError) as error:
        ServedGenerator(url, "tiny")
    assert one_line(error).startswith(f"cannot reach the reader server at {url}: ")
    assert "refused" in str(error.value)


def test_urls_are_taken_with_or_without_v1():
    assert base_url("http://host:8080/v1/") == base_url("http://host:8080") == "http://host:8080"
    assert base_url("https://host/llm/v1") == "https://host/llm"
    with pytest.raises(ReaderServerError, match="must start with http"):
        base_url("localhost:8080")


def test_a_refused_request_says_what_the_server_said(stand_in):
    missing = b'{"error": {"message": "model \\"tiny\\" not found, try pulling it first"}}'  # Ollama's
    server = stand_in(chat(lambda h, _: h.reply(404, missing)))
    with pytest.raises(ReaderServerError) as error:
        read(ServedGenerator(server.url, "tiny"))
    assert one_line(error) == (
        f'the reader server at {server.url} refused /v1/chat/completions (404): model "tiny" not found, try pulling it first'
    )


def test_an_internal_error_before_the_stream_is_one_line(stand_in):
    server = stand_in(chat(lambda h, _: h.reply(500, b"Internal Server Error\n", "text/plain")))
    with pytest.raises(ReaderServerError) as error:
        read(ServedGenerator(server.url, "tiny"))
    assert one_line(error).endswith("refused /v1/chat/completions (500): Internal Server Error")


def test_an_error_mid_stream_ends_the_answer_with_its_message(stand_in):
    failure = {"error": {"code": 500, "message": "the KV cache is full", "type": "server_error"}}  # llama-server's
    server = stand_in(chat(lambda h, _: h.stream(piece("So"), piece(" the"), event(failure))))
    pieces = []
    with pytest.raises(ReaderServerError) as error:
        for text in ServedGenerator(server.url, "tiny").stream(
            [{"role": "user", "content": "?"}], max_tokens=8, cancel=threading.Event()
        ):
            pieces.append(text)
    assert pieces == ["So", " the"]
    assert one_line(error) == f"the reader server at {server.url} failed: the KV cache is full"


def test_a_stream_that_stops_sending_times_out(stand_in):
    server = stand_in(chat(lambda h, _: h.stream(piece("So"), then_wait=3)))
    reader = ServedGenerator(server.url, "tiny", timeout=0.3)
    started = time.monotonic()
    with pytest.raises(ReaderServerError) as error:
        read(reader)
    assert one_line(error) == f"the reader server at {server.url} sent nothing for 0.3 s"
    assert time.monotonic() - started < 2


def test_a_stream_cut_before_done_is_an_error(stand_in):
    server = stand_in(chat(lambda h, _: h.stream(piece("So"))))
    with pytest.raises(ReaderServerError, match="ended its reply before \\[DONE\\]"):
        read(ServedGenerator(server.url, "tiny"))


def test_replies_that_are_not_json_are_named(stand_in):
    page = stand_in({"/v1/models": lambda h, _: h.reply(200, b"<html><body>Welcome</body></html>", "text/html")})
    with pytest.raises(ReaderServerError) as error:
        ServedGenerator(page.url, "tiny")
    assert one_line(error) == (
        f"the reader server at {page.url} answered /v1/models with something other than JSON: "
        "'<html><body>Welcome</body></html>'"
    )
    garbled = stand_in(chat(lambda h, _: h.stream(piece("So"), b"data: {not json\n\n", DONE)))
    with pytest.raises(ReaderServerError, match="answered /v1/chat/completions with something other than JSON"):
        read(ServedGenerator(garbled.url, "tiny"))
    web = stand_in(chat(lambda h, _: h.reply(200, b"<html></html>", "text/html")))
    with pytest.raises(ReaderServerError, match="with text/html, not a stream of events"):
        read(ServedGenerator(web.url, "tiny"))


def test_a_reply_that_is_not_streamed_is_read_whole(stand_in):
    whole = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Gustave Eiffel."}}]}
    server = stand_in(chat(lambda h, _: h.reply(200, json.dumps(whole).encode())))
    assert read(ServedGenerator(server.url, "tiny")) == "Gustave Eiffel."


def test_the_request_is_greedy_and_asks_to_go_on_with_a_reply_begun(stand_in):
    server = stand_in(chat(lambda h, _: h.stream(piece("Paris."), DONE)))
    reader = ServedGenerator(server.url, "tiny", seed=7)
    asked = [{"role": "user", "content": "Capital of France?"}]
    assert read(reader, asked) == "Paris."
    read(reader, [*asked, {"role": "assistant", "content": "So the answer is"}])
    (_, plain, _), (_, begun, _) = [r for r in server.requests if r[0] == "/v1/chat/completions"]
    assert plain == {
        "model": "tiny",
        "messages": asked,
        "max_tokens": 16,
        "stream": True,
        "temperature": 0.0,
        "top_k": 1,
        "seed": 7,
        "repeat_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }
    assert "continue_final_message" not in plain
    assert begun["continue_final_message"] is True and begun["add_generation_prompt"] is False


def test_the_api_key_is_sent_and_never_shown(stand_in, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    monkeypatch.setenv("ITERRETGEN_LLM_API_KEY", "sk-secret")
    server = stand_in(chat(lambda h, _: h.reply(401, b'{"error": {"message": "invalid api key"}}')))
    reader = ServedGenerator(server.url, "tiny")
    with pytest.raises(ReaderServerError) as error:
        read(reader)
    assert one_line(error).endswith("(401): invalid api key (set ITERRETGEN_LLM_API_KEY)")
    assert "sk-" not in str(error.value)
    assert {headers["Authorization"] for _, _, headers in server.requests} == {"Bearer sk-secret"}
    monkeypatch.delenv("ITERRETGEN_LLM_API_KEY")
    ServedGenerator(server.url, "tiny")
    assert server.requests[-1][2]["Authorization"] == "Bearer sk-other"


def test_context_and_tokens_come_from_llama_servers_endpoints(stand_in):
    server = stand_in(
        {
            "/props": lambda h, _: h.reply(200, b'{"default_generation_settings": {"n_ctx": 8192}}'),
            "/tokenize": lambda h, body: h.reply(200, json.dumps({"tokens": body["content"].split()}).encode()),
        }
    )
    reader = ServedGenerator(server.url, "tiny", n_ctx=4096)
    assert reader.n_ctx == 8192
    assert reader.count_tokens("one two three") == 3
    assert reader.count_tokens("one two three") == 3  # counted once: the same text is asked again
    asked = [body["content"] for path, body, _ in server.requests if path == "/tokenize"]
    assert asked == ["", "one two three"]


def test_without_a_tokenizer_or_context_the_estimate_and_the_setting_hold(stand_in):
    listing = {"data": [{"id": "qwen", "meta": {"n_ctx_train": 2048}}, {"id": "big", "max_model_len": 32768}]}
    server = stand_in({"/v1/models": lambda h, _: h.reply(200, json.dumps(listing).encode())})
    reader = ServedGenerator(server.url, "qwen", n_ctx=4096)
    assert reader.n_ctx == 2048  # the model's trained length caps the setting
    assert reader.count_tokens("Dijon, 1832.") == estimated_tokens("Dijon, 1832.") == 8
    assert ServedGenerator(server.url, "big", n_ctx=4096).n_ctx == 32768  # vLLM's own context


def test_the_setting_flag_and_environment_name_the_server(monkeypatch):
    parser = argparse.ArgumentParser()
    add_parser(parser)
    args = parser.parse_args(["q", "--folder", ".", "--llm-server", "http://127.0.0.1:8080/v1", "--llm", "qwen"])
    settings = settings_from(args)
    assert (settings.llm_server, settings.llm) == ("http://127.0.0.1:8080/v1", "qwen")
    monkeypatch.setenv("ITERRETGEN_LLM_SERVER", "http://127.0.0.1:11434/v1")
    assert config.load().llm_server == "http://127.0.0.1:11434/v1"


def test_the_session_reads_with_the_servers_model_unless_one_is_named(stand_in, monkeypatch):
    server = stand_in()
    said: list[str] = []
    session = Session(config.Settings(llm=models.DEFAULT_LLM, llm_server=server.url))
    monkeypatch.setattr(session, "load_embedder", lambda status: None)  # the embedder loads here as ever
    session.load_models(status=said.append)
    assert isinstance(session.generator, ServedGenerator) and session.generator.model == "tiny"
    assert f"reading with tiny, the first model {server.url} lists (--llm NAME picks another)" in said
    info = session.info()
    assert (info["llm"], info["llm_server"], info["device"]) == ("tiny", server.url, "server")
    named = Session(replace(session.settings, llm="other"))
    with pytest.raises(ReaderServerError, match="serves no model 'other' \\(it lists: tiny\\)"):
        named.load_models()


@pilot_test
async def test_the_chat_shows_a_server_failure_and_answers_the_next_question(tmp_path, stand_in):
    answers = iter([[piece("So"), event({"error": {"message": "out of memory"}})]])

    def answer(handler: Handler, _) -> None:
        handler.stream(*next(answers, [piece("Gustave Eiffel was born in Dijon. So the answer is Dijon."), DONE]))

    server = stand_in(chat(answer))
    app, _ = make_app(tmp_path, generator=ServedGenerator(server.url, "tiny"))
    async with app.run_test(size=(180, 50)) as pilot:
        await wait_for(pilot, app.ready.is_set)
        for question in ("Where was Eiffel born?", "And where was he born?"):
            pilot.app.query_one("#question").value = question
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.current.question == question and app.current.done)  # noqa: B023
        first, second = [view.source for view in app.query("AnswerView")]
        assert f"**Could not answer:** the reader server at {server.url} failed: out of memory" in first
        assert "Dijon" in second and "Could not answer" not in second
