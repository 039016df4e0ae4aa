"""Free TCP ports on loopback, for a server this process is about to start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick; another process could still take it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something listens on ``port`` now (binding it fails), so a server started there would not
    be the one its links reach."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed connection's TIME_WAIT does not count
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False
