#!/usr/bin/python3
"""hostreg.py PORT REALMPORT - a hostile registry for 75-hostile-pull.sh,
plain HTTP on 127.0.0.1, serving one small image of its own (one layer,
one file) under /v2/KIND/img, where KIND says how:

  ok       as a registry should
  trickle  blobs at 2 bytes a second (the old low-speed limit was 1)
  stall    blob headers, then nothing
  realm    a Bearer challenge whose realm is http://localhost:REALMPORT/
           token, another host than the one pulled from; the realm
           answers any request with a token, and logs "realm-auth=SCHEME"
           (or "realm-auth=none") without the credentials themselves

Every request is logged to stdout.
"""
import gzip
import hashlib
import io
import json
import random
import sys
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, REALM_PORT = int(sys.argv[1]), int(sys.argv[2])


def make_image():
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        # 8 KiB that do not compress: an hour at 2 bytes a second
        data = random.Random(31).randbytes(8192)
        i = tarfile.TarInfo("hello")
        i.size, i.mtime = len(data), 1700000000
        t.addfile(i, io.BytesIO(data))
    layer = gzip.compress(raw.getvalue(), mtime=0)
    cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                      "rootfs": {"type": "layers", "diff_ids": [
                          "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()]}}).encode()
    blobs = {}

    def desc(b, mt):
        d = "sha256:" + hashlib.sha256(b).hexdigest()
        blobs[d] = b
        return {"mediaType": mt, "digest": d, "size": len(b)}
    man = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": desc(cfg, "application/vnd.oci.image.config.v1+json"),
        "layers": [desc(layer, "application/vnd.oci.image.layer.v1.tar+gzip")]}).encode()
    return man, blobs


MANIFEST, BLOBS = make_image()
MT = "application/vnd.oci.image.manifest.v1+json"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        print(fmt % args, flush=True)

    def send(self, code, body=b"", ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def realm(self):
        a = self.headers.get("Authorization", "")
        print("realm-auth=%s" % (a.split(" ")[0] if a else "none"), flush=True)
        self.send(200, json.dumps({"token": "hostile-token"}).encode())

    def do_GET(self):
        p = self.path.split("?")[0]
        if self.server.server_port == REALM_PORT:
            return self.realm()
        parts = p.split("/")  # '', v2, KIND, img, manifests|blobs, REF
        if p in ("/v2", "/v2/"):
            return self.send(200, b"{}")
        if len(parts) != 6 or parts[3] != "img":
            return self.send(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}')
        kind, what, ref = parts[2], parts[4], parts[5]
        if kind == "realm" and self.headers.get("Authorization") != "Bearer hostile-token":
            chal = 'Bearer realm="http://localhost:%d/token",service="hostile"' % REALM_PORT
            return self.send(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}',
                             extra=[("WWW-Authenticate", chal)])
        if what == "manifests":
            return self.send(200, MANIFEST, MT, [(
                "Docker-Content-Digest", "sha256:" + hashlib.sha256(MANIFEST).hexdigest())])
        body = BLOBS.get(ref)
        if body is None:
            return self.send(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
        if kind not in ("trickle", "stall") or body.startswith(b"{"):
            return self.send(200, body, "application/octet-stream")
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        try:
            for i in range(len(body)):
                if kind == "stall":
                    time.sleep(3600)
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(0.5)
        except OSError:
            print("client gone after %d bytes" % i, flush=True)

    do_HEAD = do_GET


for port in (REALM_PORT, PORT):
    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    srv.daemon_threads = True
    if port == PORT:
        srv.serve_forever()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
