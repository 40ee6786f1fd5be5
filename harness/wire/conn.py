"""How the judge, the candidate process and the parent talk: JSON lines on Unix sockets (file
descriptors passed beside them). Bulk tensor bytes go through ``harness.wire.shm``.

Nothing crossing to the judge is unpickled or executed: a message is JSON, a tensor is a descriptor
(offset, shape, dtype) the judge validates plus raw bytes it copies out of the shared buffer.
"""

from __future__ import annotations

import json
import socket
from typing import Any

MAX_LINE = 64 * 2**20


class WireError(Exception):
    """The peer broke the protocol or went away."""


class Malformed(WireError):
    """The peer sent something that is no message (too long, not JSON, nested past the parser's depth): it is there
    and broke the protocol, unlike a peer that went away."""


class Conn:
    """One end of a socket: ``send(kind, payload)``, ``recv() -> (kind, payload)``, and fds on the side."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = b""

    @classmethod
    def from_fd(cls, fd: int) -> Conn:
        return cls(socket.socket(fileno=fd))

    def send(self, kind: str, payload: Any = None, fds: list[int] | None = None) -> None:
        data = (json.dumps({"kind": kind, "payload": payload}, allow_nan=True) + "\n").encode()
        try:
            if fds:
                socket.send_fds(self.sock, [data[:1]], fds)
                data = data[1:]
            self.sock.sendall(data)
        except OSError as exc:
            raise WireError(f"connection broken: {exc}") from exc

    def recv(self, with_fds: bool = False, timeout: float | None = None) -> tuple[str, Any] | tuple[str, Any, list[int]]:
        fds: list[int] = []
        self.sock.settimeout(timeout)
        try:
            if with_fds and not self._buf:
                msg, fds, _flags, _addr = socket.recv_fds(self.sock, 1, 16)
                if not msg:
                    raise WireError("connection closed")
                self._buf += msg
            while b"\n" not in self._buf:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise WireError("connection closed")
                self._buf += chunk
                if len(self._buf) > MAX_LINE:
                    raise Malformed("message too long")
        except TimeoutError as exc:
            raise WireError("timed out waiting for a message") from exc
        except OSError as exc:
            raise WireError(f"connection broken: {exc}") from exc
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
            kind, payload = str(msg["kind"]), msg.get("payload")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # RecursionError: '[[[[...' past the depth
            raise Malformed("malformed message") from exc
        return (kind, payload, fds) if with_fds else (kind, payload)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
