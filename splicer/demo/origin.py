"""A small HTTP/1.1 origin server for the demo, the tests and the benchmarks (stdlib only).

Run: ``python -m splicer.demo.origin --port 8001 --root DIR --name s1``. Every response
carries ``X-Served-By: <name>``. Routes:

  GET  /files/<name>          the file with Content-Length, sent with sendfile(2)
  GET  /chunked/<name>        the file with Transfer-Encoding: chunked (1 MiB chunks)
  GET  /close/<name>          the file close-delimited (no length; the server closes)
  GET  /die/<name>?after=N    announces the whole file's length, sends N bytes, then closes
  GET  /headers               the request head as JSON: {"method", "target", "headers": [[n, v]...]}
  GET  /health                200 {"status": "ok", "server": name} (for option httpchk)
  POST or PUT anything        reads the body (Content-Length or chunked), answers JSON
                              {"size": bytes, "sha256": hex, "headers": [...]}
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class OriginHandler(BaseHTTPRequestHandler):
    """Request handler; the server object carries `root` (directory) and `name`."""

    protocol_version = "HTTP/1.1"
    server_version = "splicer-demo-origin"

    def log_message(self, fmt, *args):  # quiet: tests read stderr for other things
        pass

    def _send_json(self, obj, status=200):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Served-By", self.server.name)
        self.end_headers()
        self.wfile.write(body)

    def _file(self, name):
        path = os.path.join(self.server.root, os.path.basename(name))
        if not os.path.isfile(path):
            self._send_json({"error": "not found", "name": name}, 404)
            return None
        return path

    def do_HEAD(self):
        """The GET routes without their bodies."""
        self.do_GET()

    def do_GET(self):
        """Serve the routes listed in the module docstring."""
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/", 1)
        kind, name = parts[0], parts[1] if len(parts) > 1 else ""
        if kind == "health":  # for `option httpchk GET /health`
            self._send_json({"status": "ok", "server": self.server.name})
            return
        if kind == "headers":
            self._send_json({"method": self.command, "target": self.path,
                             "headers": [[k, v] for k, v in self.headers.items()]})
            return
        if kind not in ("files", "chunked", "close", "die"):
            self._send_json({"error": "no such route"}, 404)
            return
        path = self._file(name)
        if path is None:
            return
        size = os.path.getsize(path)
        self.send_response(200)
        self.send_header("X-Served-By", self.server.name)
        self.send_header("Content-Type", "application/octet-stream")
        if kind == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
        elif kind == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        if self.command == "HEAD":
            return
        self.wfile.flush()
        with open(path, "rb") as f:
            if kind == "files":
                self.connection.sendfile(f)
            elif kind == "chunked":
                while True:
                    block = f.read(1 << 20)
                    if not block:
                        break
                    self.wfile.write(b"%x\r\n" % len(block) + block + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
            elif kind == "close":
                self.connection.sendfile(f)
            else:  # die
                after = int(parse_qs(url.query).get("after", ["0"])[0])
                self.connection.sendfile(f, 0, after)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

    def _read_body(self, sink):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            while True:
                line = self.rfile.readline(4096)
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(4096) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = size
                while left:
                    block = self.rfile.read(min(left, 1 << 20))
                    if not block:
                        raise ConnectionError("client closed mid-chunk")
                    sink(block)
                    left -= len(block)
                self.rfile.readline(4096)
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                block = self.rfile.read(min(left, 1 << 20))
                if not block:
                    raise ConnectionError("client closed mid-body")
                sink(block)
                left -= len(block)

    def do_POST(self):
        """Read the whole body (Content-Length or chunked) and answer its size and sha256."""
        h = hashlib.sha256()
        n = 0

        def sink(block):
            nonlocal n
            h.update(block)
            n += len(block)

        self._read_body(sink)
        self._send_json({"size": n, "sha256": h.hexdigest(),
                         "headers": [[k, v] for k, v in self.headers.items()]})

    do_PUT = do_POST


class OriginServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its file root and its name."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, addr, root: str, name: str) -> None:
        self.root = root
        self.name = name
        super().__init__(addr, OriginHandler)


def make_file(path: str, size: int) -> str:
    """Create `path` holding `size` bytes of incompressible content, unless it already exists
    with that size. Returns the path.

    The content is a random 64 MiB block repeated, each MiB starting with its own 8-byte
    index, so no two MiB are equal: a reordered, repeated or lost MiB changes the sha256.
    """
    if os.path.exists(path) and os.path.getsize(path) == size:
        return path
    mib = 1 << 20
    block = bytearray(os.urandom(min(size, 64 * mib)))
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        done = 0
        while done < size:
            n = min(size - done, len(block))
            for off in range(0, n, mib):
                block[off:off + 8] = ((done + off) // mib).to_bytes(8, "little")[: min(8, n - off)]
            f.write(memoryview(block)[:n])
            done += n
    os.replace(tmp, path)
    return path


def main(argv=None) -> int:
    """Serve until killed. Prints ``origin <name> listening on <host>:<port>`` when ready."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--root", required=True, help="directory of files served under /files/")
    ap.add_argument("--name", default="origin", help="value of the X-Served-By header")
    args = ap.parse_args(argv)
    srv = OriginServer((args.host, args.port), args.root, args.name)
    print(f"origin {args.name} listening on {args.host}:{args.port}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
