#!/usr/bin/env python3
"""A misbehaving debuginfod server for tests/t_debuginfod.sh, on loopback.

  debuginfod_stub.py drip     answers every request with 200 and a 1 MiB length, then
                              sends one byte every 200 ms
  debuginfod_stub.py garbage  answers every request with 200 and 64 KiB of bytes that are
                              not ELF

Prints "listening PORT" on stdout once it accepts connections; runs until killed.
"""
import http.server
import os
import socketserver
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    mode = "garbage"

    def do_GET(self):
        if self.mode == "drip":
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            try:
                for _ in range(1 << 20):
                    self.wfile.write(b"\x7f")
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        body = bytes((i * 7 + 3) & 0xFF for i in range(64 * 1024))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    Handler.mode = sys.argv[1]
    with Server(("127.0.0.1", 0), Handler) as server:
        print("listening", server.server_address[1], flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
