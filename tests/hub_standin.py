"""A local stand-in for the Hugging Face hub, serving the URLs huggingface_hub downloads from.

- HEAD/GET ``/{repo}/resolve/{revision}/{path}``: a regular file answers itself, with its
  git blob id as ETag; an LFS file answers 302 to a "CDN" on another origin (``localhost``
  instead of ``127.0.0.1``) with ``X-Linked-Etag`` (its sha256) and ``X-Linked-Size``, as the
  hub does. Every answer carries ``X-Repo-Commit``; unknown files get 404 ``EntryNotFound``.
- GET ``/cdn/{sha256}``: the LFS content, honouring ``Range: bytes=N-``.

Faults for tests: ``corrupt`` serves other bytes than the declared sha256; ``cut_after``
makes the next GET stop after that many body bytes and drop the connection.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubFile:
    data: bytes
    lfs: bool
    corrupt: bool = False

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def etag(self) -> str:
        if self.lfs:
            return self.sha256
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()

    @property
    def body(self) -> bytes:
        return bytes(b ^ 0xFF for b in self.data) if self.corrupt else self.data


class StandInHub:
    def __init__(self) -> None:
        self.files: dict[str, HubFile] = {}  # "repo/path" -> file
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range)
        self.cut_after: int | None = None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def add(self, repo: str, path: str, data: bytes, *, lfs: bool = True, corrupt: bool = False) -> HubFile:
        self.files[f"{repo}/{path}"] = file = HubFile(data, lfs, corrupt)
        return file

    def gets(self) -> list[tuple[str, str, str | None]]:
        return [r for r in self.requests if r[0] == "GET"]

    def __enter__(self) -> StandInHub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(hub: StandInHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep pytest output clean
            pass

        def do_HEAD(self) -> None:
            self._answer(send_body=False)

        def do_GET(self) -> None:
            self._answer(send_body=True)

        def _answer(self, send_body: bool) -> None:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))
            if self.path.startswith("/cdn/"):
                file = next((f for f in hub.files.values() if f.lfs and f.sha256 == self.path[5:]), None)
            else:
                repo, found, rest = self.path.lstrip("/").partition("/resolve/")
                _revision, _, path = rest.partition("/")
                file = hub.files.get(f"{repo}/{path}") if found else None
                if file is not None and file.lfs:
                    self._redirect_to_cdn(file)
                    return
            if file is None:
                self._missing()
            else:
                self._content(file, send_body)

        def _redirect_to_cdn(self, file: HubFile) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{hub.port}/cdn/{file.sha256}")
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("X-Linked-Etag", f'"{file.sha256}"')
            self.send_header("X-Linked-Size", str(len(file.data)))
            self.send_header("ETag", '"pointer-etag"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _missing(self) -> None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _content(self, file: HubFile, send_body: bool) -> None:
            body = file.body
            start = 0
            ranged = self.headers.get("Range", "")
            if ranged.startswith("bytes=") and ranged.endswith("-"):
                start = int(ranged[6:-1])
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", f'"{file.etag}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.end_headers()
            if not send_body:
                return
            cut, hub.cut_after = hub.cut_after, None
            if cut is None:
                self.wfile.write(body[start:])
                return
            self.wfile.write(body[start : start + cut])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

    return Handler
