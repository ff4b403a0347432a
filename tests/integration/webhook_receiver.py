#!/usr/bin/env python3
"""tests/integration/webhook_receiver.py -- a tiny local receiver for the
relay's alert webhook (alert.webhook.url), for the integration tests.

    webhook_receiver.py OUTFILE PORTFILE [--status CODE] [--lifetime SECS]

Listens on 127.0.0.1, port 0 (the kernel picks a free one), writes that
port to PORTFILE (once the socket is listening, via a rename so a reader
never sees a partial file) and prints it on stdout. Each POST body is
appended to OUTFILE as one line (JSON is re-serialised compactly; a body
that is not JSON is written with its line breaks escaped) and answered
with CODE (default 200). Anything but POST gets 405. The process exits by
itself after SECS (default 600) so that a test that dies cannot leave it
behind; tests stop it earlier by its pid.

Standard library only.
"""
import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outfile")
    ap.add_argument("portfile")
    ap.add_argument("--status", type=int, default=200)
    ap.add_argument("--lifetime", type=float, default=600)
    args = ap.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _reply(self, code, body=b"ok\n"):
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n > 0 else b""
            text = raw.decode("utf-8", "replace")
            try:
                line = json.dumps(json.loads(text), separators=(",", ":"),
                                  sort_keys=False)
            except ValueError:
                line = (text.replace("\\", "\\\\").replace("\r", "\\r")
                        .replace("\n", "\\n"))
            with lock:
                with open(args.outfile, "a", encoding="utf-8") as f:
                    f.write(line + "\n")
            self._reply(args.status)

        def do_GET(self):
            self._reply(405, b"POST only\n")

        def log_message(self, fmt, *a):  # quiet: the test reads OUTFILE
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    open(args.outfile, "a").close()
    tmp = args.portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.replace(tmp, args.portfile)
    print(port, flush=True)
    timer = threading.Timer(args.lifetime, srv.shutdown)
    timer.daemon = True
    timer.start()
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
