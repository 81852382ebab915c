"""Can pulls reach the model hub? One line for the models screen when they cannot.

A TCP connection to the hub's host is enough to tell an offline machine (no DNS, no
route) from one that can pull; what the hub then answers is ``pull``'s business.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

PUBLIC_HUB = "https://huggingface.co"
OFFLINE_VALUES = ("1", "on", "yes", "true")


def address() -> str:
    """The hub pulls go to: HF_ENDPOINT as set now, else the public hub."""
    return (os.environ.get("HF_ENDPOINT") or PUBLIC_HUB).rstrip("/")


def unreachable(timeout: float = 3.0) -> str:
    """Why pulls cannot reach the hub now, in one line; "" when they can."""
    hub = address()
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in OFFLINE_VALUES:
        return f"HF_HUB_OFFLINE is set: pulls from {hub} are off (installed models still work)"
    url = urlsplit(hub)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=timeout).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return f"the hub {hub} cannot be reached ({reason}): pulls are off, installed models still work"
    return ""
