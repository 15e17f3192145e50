#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A receiver of pushed heap profiles for test/agent/push.sh, written here
from the receivers' documented wire formats (not from heapadmin's code):

  POST /ingest?name=<app>{k=v,...}&from=&until=&format=pprof
      Grafana Pyroscope's HTTP ingest API: a multipart/form-data body
      whose field "profile" holds the pprof bytes.
  POST /profiles/writeraw
      Parca's ProfileStoreService.WriteRaw over its HTTP binding: JSON
      {"series":[{"labels":{"labels":[{"name":..,"value":..}]},
                  "samples":[{"rawProfile":"<base64>"}]}]}

Each accepted profile is written to a file of its own and described by
one JSON line in OUT/log.jsonl (OUT/<pid>-<n>.pb.gz: a receiver started
again never writes over an earlier one's), with whether the sender read
the answer (acked: false when it was killed with the push in flight): the API, the application name and labels as
the receiver parses them, from/until, the Idempotency-Key and
X-Scope-OrgID headers and the profile's file. Decoding the profile is
left to an independent tool (go tool pprof -raw).

usage: pushrecv.py PORT OUT [MODE]
  MODE ok (default) | 500 | 413 | hang (reads the request, never answers)
"""
import base64
import email.parser
import email.policy
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
OUT = sys.argv[2]
MODE = sys.argv[3] if len(sys.argv) > 3 else "ok"
LOCK = threading.Lock()
COUNT = [0]


def parse_app(name):
    """Pyroscope's application key: app{k=v,k=v}."""
    if "{" not in name or not name.endswith("}"):
        return name, {}
    app, rest = name.split("{", 1)
    labels = {}
    for pair in rest[:-1].split(","):
        if pair:
            k, v = pair.split("=", 1)
            labels[k] = v
    return app, labels


def multipart_field(ctype, body, field):
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
    for part in msg.iter_parts():
        if part.get_param("name", header="content-disposition") == field:
            return part.get_payload(decode=True)
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if MODE == "hang":
            threading.Event().wait(3600)
            return
        if MODE in ("500", "413"):
            self.send_response(int(MODE))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        url = urllib.parse.urlsplit(self.path)
        rec = {"path": url.path,
               "key": self.headers.get("Idempotency-Key"),
               "tenant": self.headers.get("X-Scope-OrgID"),
               "auth": self.headers.get("Authorization")}
        if url.path == "/ingest":
            q = urllib.parse.parse_qs(url.query)
            app, labels = parse_app(q["name"][0])
            rec.update(api="pyroscope", app=app, labels=labels,
                       frm=int(q["from"][0]), until=int(q["until"][0]),
                       format=q.get("format", [""])[0])
            prof = multipart_field(self.headers["Content-Type"], body,
                                   "profile")
        elif url.path == "/profiles/writeraw":
            doc = json.loads(body)
            series = doc["series"][0]
            labels = {lv["name"]: lv["value"]
                      for lv in series["labels"]["labels"]}
            rec.update(api="parca", labels=labels)
            prof = base64.b64decode(series["samples"][0]["rawProfile"])
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if prof is None:
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with LOCK:
            COUNT[0] += 1
            f = os.path.join(OUT, "%d-%d.pb.gz" % (os.getpid(), COUNT[0]))
            with open(f, "wb") as fh:
                fh.write(prof)
        rec["file"] = f
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        rec["acked"] = self.client_read_answer()
        with LOCK:
            with open(os.path.join(OUT, "log.jsonl"), "a") as fh:
                fh.write(json.dumps(rec) + "\n")
        self.close_connection = True

    def client_read_answer(self):
        """Whether the client read the 200: it closes, and the read ends
        (b""); a client killed before reading it leaves the answer unread,
        so its kernel resets the connection (ECONNRESET): a push cut in
        flight, which the sender cannot know was taken."""
        self.connection.settimeout(10)
        try:
            while self.connection.recv(4096):
                pass
            return True
        except ConnectionResetError:
            return False
        except OSError:
            return True


os.makedirs(OUT, exist_ok=True)
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
