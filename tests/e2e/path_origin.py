"""A small asyncio origin for the scale test: keep-alive GETs, each answered with its own path.

Run: ``python -m tests.e2e.path_origin --port N``. Every request (no body) on any
connection, kept alive as long as the peer keeps it, gets::

    HTTP/1.1 200 OK
    Content-Length: <len>
    Content-Type: text/plain

    path=<request target>\\n

so a client can tell its response from any other's by the exact body bytes. It prints
``listening`` once it accepts. One process, one loop: it holds many connections on few
resources (splicer.demo.origin has a thread per connection).
"""
from __future__ import annotations

import argparse
import asyncio

import uvloop


def answer(target: bytes) -> bytes:
    """The response to a GET of `target` (the exact bytes the origin sends)."""
    body = b"path=" + target + b"\n"
    return (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n" % len(body)) + body


class PathProtocol(asyncio.Protocol):
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.buf = b""

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            head, self.buf = self.buf[:end], self.buf[end + 4:]
            parts = head.split(b"\r\n", 1)[0].split(b" ")
            if len(parts) != 3 or parts[0] != b"GET":
                self.transport.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                self.transport.close()
                return
            self.transport.write(answer(parts[1]))


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(PathProtocol, "127.0.0.1", port, backlog=4096, reuse_address=True)
    print("listening", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    uvloop.run(main(args.port))
