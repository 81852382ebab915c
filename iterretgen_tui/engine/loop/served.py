"""A reader served over HTTP: any OpenAI-compatible chat-completions endpoint (llama.cpp's
llama-server, Ollama's /v1, vLLM, LM Studio, llama-cpp-python's server) instead of a GGUF
loaded here. Standard library HTTP only. Decoding is greedy (temperature 0, top_k 1, a fixed
seed) and the messages are the ones the in-process reader gets, so a server that runs the
same GGUF with its own chat template writes the same drafts; the loop's stop rules and loop
guard work on the streamed text as they do in-process. Each failure is one
ReaderServerError line that names the server and says what it said (docs/models.md)."""

from __future__ import annotations

import functools
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Generator as Stream
from contextlib import contextmanager
from http.client import HTTPException, HTTPResponse
from pathlib import PurePath

from ..errors import ReaderServerError
from .generator import Message, penalties_key

API_KEY_VARIABLES = ("ITERRETGEN_LLM_API_KEY", "OPENAI_API_KEY")  # the first one set is sent
# Long enough for a CPU server to evaluate a 4096-token prompt before its first token
# (llama-server sends nothing meanwhile); a server silent for longer is taken for hung.
READ_TIMEOUT = 120.0
CHAT = "/v1/chat/completions"
_NO_ENDPOINT = (400, 404, 405, 422, 501)  # what servers answer a path or body they do not know
# The servers' own tokenizers, tried in turn. llama-server's and vLLM's /tokenize each read
# their own keys: no BOS, special tokens read as plain text, as LlamaGenerator counts.
# llama-cpp-python's server always adds the model's BOS: measured on "" and taken off.
_TOKENIZERS: tuple[tuple[str, Callable[[str, str], dict]], ...] = (
    (
        "/tokenize",
        lambda text, model: {
            "content": text,
            "add_special": False,
            "parse_special": False,
            "prompt": text,
            "model": model,
            "add_special_tokens": False,
        },
    ),
    ("/extras/tokenize", lambda text, model: {"input": text, "model": model}),
)


def base_url(url: str) -> str:
    """The server's root, from a URL given with or without its /v1 and a trailing slash."""
    root = url.strip().rstrip("/")
    if not root.startswith(("http://", "https://")):
        raise ReaderServerError(f"the reader server's URL must start with http:// or https://, not {url!r}")
    return root.removesuffix("/v1")


def api_key_from_env() -> str:
    return next((os.environ[name] for name in API_KEY_VARIABLES if os.environ.get(name)), "")


def estimated_tokens(text: str) -> int:
    """A count for servers that cannot tokenize for us, high enough that prompts fit: prose
    runs 4-5 UTF-8 bytes a token and other scripts 2-3, so half the bytes overcounts them;
    digits, which many tokenizers split one a token, count one each."""
    data = text.encode("utf-8")
    return -(-(len(data) + sum(c.isdigit() for c in text)) // 2)


def one_line(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[:limit]


def error_text(raw: bytes) -> str:
    """What an error reply says: OpenAI's {"error": {"message"}}, FastAPI's {"detail"},
    or the text itself."""
    try:
        said = json.loads(raw)
    except ValueError:
        return one_line(raw.decode("utf-8", "replace")) or "no reason given"
    if isinstance(said, dict):
        said = said.get("error") or said.get("detail") or said.get("message") or said
    if isinstance(said, dict):
        said = said.get("message", said)
    return one_line(str(said))


class ReaderServer:
    """The HTTP side: JSON requests and server-sent event streams, each failure one line.
    The API key goes into the Authorization header only, never into a message or a log."""

    def __init__(self, url: str, *, timeout: float = READ_TIMEOUT, api_key: str | None = None) -> None:
        self.url = url
        self.base = base_url(url)
        self.timeout = timeout
        key = api_key_from_env() if api_key is None else api_key
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        # Reached directly: proxy settings meant for the web would send a local URL elsewhere.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _send(self, path: str, body: dict | None) -> HTTPResponse:
        """The response, or urllib's HTTPError for the caller to read what the server said."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base + path, data=data, headers=self._headers)
        try:
            return self._opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError:
            raise
        except urllib.error.URLError as exc:
            raise ReaderServerError(f"cannot reach the reader server at {self.url}: {exc.reason}") from None
        except (OSError, HTTPException) as exc:
            raise self._broken(exc) from None

    def _refused(self, exc: urllib.error.HTTPError, path: str) -> ReaderServerError:
        try:
            said = error_text(exc.read())
        except (OSError, HTTPException):
            said = exc.reason
        hint = f" (set {API_KEY_VARIABLES[0]})" if exc.code in (401, 403) else ""
        return ReaderServerError(f"the reader server at {self.url} refused {path} ({exc.code}): {said}{hint}")

    def _broken(self, exc: BaseException) -> ReaderServerError:
        if isinstance(exc, TimeoutError):
            return ReaderServerError(f"the reader server at {self.url} sent nothing for {self.timeout:g} s")
        return ReaderServerError(f"the reader server at {self.url} broke off its reply: {exc!r}")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except (OSError, HTTPException) as exc:
            raise self._broken(exc) from None

    def _parsed(self, raw: bytes, path: str) -> dict:
        try:
            said = json.loads(raw)
        except ValueError:
            said = None
        if not isinstance(said, dict):
            text = raw.decode("utf-8", "replace")
            raise ReaderServerError(
                f"the reader server at {self.url} answered {path} with something other than JSON: {one_line(text, 80)!r}"
            )
        if said.get("error"):  # an error reported in a stream, or with a 200
            raise ReaderServerError(f"the reader server at {self.url} failed: {error_text(raw)}")
        return said

    def json(self, path: str, body: dict | None = None, *, optional: bool = False) -> dict | None:
        """The JSON reply to a GET (no ``body``) or POST; None when ``optional`` and the
        server has no such endpoint."""
        try:
            response = self._send(path, body)
        except urllib.error.HTTPError as exc:
            if optional and exc.code in _NO_ENDPOINT:
                return None
            raise self._refused(exc, path) from None
        with response, self._reading():
            raw = response.read()
        return self._parsed(raw, path)

    def events(self, path: str, body: dict) -> Stream[dict, None, None]:
        """The JSON objects of a server-sent event stream, up to its [DONE]. Closing the
        generator closes the connection: servers stop decoding when they see it closed."""
        try:
            response = self._send(path, body)
        except urllib.error.HTTPError as exc:
            raise self._refused(exc, path) from None
        with response, self._reading():
            kind = response.headers.get_content_type()
            if kind == "application/json":  # a server that does not stream sends it all at once
                yield self._parsed(response.read(), path)
                return
            if kind != "text/event-stream":
                raise ReaderServerError(
                    f"the reader server at {self.url} answered {path} with {kind}, not a stream of events "
                    "(is it an OpenAI-compatible server?)"
                )
            for raw in response:
                line = raw.strip()
                if not line.startswith(b"data:"):  # blank separators, ": ping" comments, event names
                    continue
                data = line.removeprefix(b"data:").strip()
                if data == b"[DONE]":
                    return
                yield self._parsed(data, path)
        raise ReaderServerError(f"the reader server at {self.url} ended its reply before [DONE]")

    def models(self) -> dict[str, dict]:
        """The models /v1/models lists, by id; empty where the server lists none."""
        data = (self.json("/v1/models", optional=True) or {}).get("data")
        if not isinstance(data, list):
            return {}
        return {entry["id"]: entry for entry in data if isinstance(entry, dict) and isinstance(entry.get("id"), str)}


def first_model(url: str, *, timeout: float = READ_TIMEOUT, api_key: str | None = None) -> str:
    """The model a server lists first: the reader when none is named."""
    listed = ReaderServer(url, timeout=timeout, api_key=api_key).models()
    if not listed:
        raise ReaderServerError(f"the reader server at {url} lists no models at /v1/models: name one with --llm NAME")
    return next(iter(listed))


def delta_text(chunk: dict) -> str:
    """The text of a streamed chunk (or of a whole reply from a server that did not stream)."""
    choices = chunk.get("choices") or [{}]  # a usage-only chunk has none
    said = choices[0].get("delta") or choices[0].get("message") or {}
    return said.get("content") or ""


class ServedGenerator:
    """A Generator (engine/loop/generator.py) whose model runs on a server."""

    device = "server"  # where the reader runs, as the status line says

    def __init__(
        self,
        url: str,
        model: str,
        *,
        n_ctx: int = 4096,
        passage_order: str = "new-first",
        seed: int = 0,
        repeat_penalty: float = 1.0,
        presence_penalty: float = 0.0,
        timeout: float = READ_TIMEOUT,
        api_key: str | None = None,
    ) -> None:
        self.server = ReaderServer(url, timeout=timeout, api_key=api_key)
        listed = self.server.models()
        # llama-server and llama-cpp-python's server answer with the model they hold,
        # whatever is asked: a name they do not list is refused here, not silently misread.
        if listed and model not in listed:
            raise ReaderServerError(
                f"the reader server at {url} serves no model {model!r} (it lists: {', '.join(listed)}); "
                "--llm NAME picks one"
            )
        self.model = model
        self.name = PurePath(model).stem if model.endswith(".gguf") else model  # llama.cpp lists file paths
        self.identity = f"served:{self.server.base}:{model}"  # never mixed with in-process memos
        # Sent every time: servers default to their own (llama-cpp-python's repeat penalty is 1.1).
        self.penalties = {
            "repeat_penalty": repeat_penalty,
            "presence_penalty": presence_penalty,
            "frequency_penalty": 0.0,
        }
        self.identity += penalties_key(repeat_penalty, presence_penalty)
        self.passage_order = passage_order
        self.seed = seed
        self.n_ctx = self._context(listed.get(model, {}), n_ctx)
        self._count = functools.lru_cache(maxsize=4096)(self._tokenizer())

    def _context(self, entry: dict, configured: int) -> int:
        """The context a request gets, where the server tells it: llama-server's slot size
        (/props), vLLM's max_model_len; else the configured one, capped by the model's
        trained length where the listing gives it (llama-server's meta)."""
        props = self.server.json("/props", optional=True) or {}
        told = (props.get("default_generation_settings") or {}).get("n_ctx") or entry.get("max_model_len")
        if told:
            return int(told)
        trained = (entry.get("meta") or {}).get("n_ctx_train")
        return min(configured, int(trained)) if trained else configured

    def _tokenizer(self) -> Callable[[str], int]:
        """The server's own token count where it has an endpoint for it, else an estimate."""
        for path, body in _TOKENIZERS:
            reply = self.server.json(path, body("", self.model), optional=True)
            if reply is not None and isinstance(reply.get("tokens"), list):
                return functools.partial(self._served_count, path, body, len(reply["tokens"]))
        return estimated_tokens

    def _served_count(self, path: str, body: Callable[[str, str], dict], added: int, text: str) -> int:
        tokens = self.server.json(path, body(text, self.model)).get("tokens")
        if not isinstance(tokens, list):
            raise ReaderServerError(f"the reader server at {self.server.url} answered {path} without tokens")
        return len(tokens) - added

    def count_tokens(self, text: str) -> int:
        return self._count(text)  # the same demos and passages are counted again each question

    def warm(self) -> None:
        """Nothing to do: a server keeps its own prompt cache."""

    def prefill(self, messages: Sequence[Message], *, keep: bool = False, disk: bool = False) -> None:
        """Nothing to do: a server evaluates a prompt when it is sent."""

    def recall(self, messages: Sequence[Message]) -> bool:
        """Nothing is saved for a server."""
        return False

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int, cancel: threading.Event
    ) -> Stream[str, None, None]:
        request = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": max_tokens,
            "stream": True,
            "temperature": 0.0,
            "top_k": 1,
            "seed": self.seed,
            **self.penalties,
        }
        if messages[-1]["role"] == "assistant":
            # A reply begun: vLLM goes on from it when asked by these keys; llama-server and
            # Ollama do by themselves; llama-cpp-python's server answers in a new turn.
            request |= {"continue_final_message": True, "add_generation_prompt": False}
        chunks = self.server.events(CHAT, request)
        try:
            for chunk in chunks:
                if cancel.is_set():
                    break
                text = delta_text(chunk)
                if text:
                    yield text
        finally:
            chunks.close()
