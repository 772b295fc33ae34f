#!/usr/bin/python3
"""regfault.py PORT UPSTREAM - a registry front for the pull tests' bad
cases. /v2/fault/KIND/... is answered as KIND says, from the real
registry's test/busybox at UPSTREAM (host:port, plain HTTP) where content
is needed; every request is logged to stdout ("GET /v2/...").

  schema1   a schema 1 manifest             big      a 5 MiB manifest
  dupkey    a manifest with a duplicate key  arm      an index of arm64 and
  401 403 404 429  those statuses (429: the     ppc64le (real manifests)
            first 2 requests, Retry-After: 1) mismatch a blob with a byte
  short     blobs 10 bytes short              flipped
  long      blobs 10 bytes too long           slow     blobs at 1 MB/s
  ctype     a manifest whose mediaType is not its Content-Type
  busy      429 with Retry-After: 1, always
  redirect  Basic auth required (any user); blobs answered 307 to
            http://localhost:PORT/v2/fault/sawauth/... (another host),
            which logs "sawauth=yes" or "sawauth=no" and serves the blob
"""
import hashlib
import json
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UP = sys.argv[2]
ACCEPT = ', '.join([
    'application/vnd.oci.image.index.v1+json',
    'application/vnd.oci.image.manifest.v1+json',
    'application/vnd.docker.distribution.manifest.list.v2+json',
    'application/vnd.docker.distribution.manifest.v2+json'])
COUNT = {}


def upstream(rest):
    req = urllib.request.Request('http://%s/v2/test/busybox/%s' % (UP, rest),
                                 headers={'Accept': ACCEPT})
    with urllib.request.urlopen(req) as r:
        return r.read(), r.headers.get('Content-Type')


class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        print(fmt % args, flush=True)

    def send(self, code, body=b'', ctype='application/json', extra=()):
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def error(self, code, name, msg, extra=()):
        self.send(code, json.dumps({'errors': [{'code': name, 'message': msg}]}).encode(),
                  extra=extra)

    def manifest(self, kind, ref):
        if kind == 'schema1':
            b = json.dumps({'schemaVersion': 1, 'name': 'fault/schema1', 'tag': ref,
                            'fsLayers': [], 'history': []}).encode()
            return self.send(200, b, 'application/vnd.docker.distribution.manifest.v1+prettyjws')
        if kind == 'big':
            b = b'{"schemaVersion":2,"pad":"' + b'x' * (5 << 20) + b'"}'
            return self.send(200, b, 'application/vnd.oci.image.manifest.v1+json')
        if kind == 'dupkey':
            b = b'{"schemaVersion":2,"schemaVersion":2,"config":{},"layers":[]}'
            return self.send(200, b, 'application/vnd.oci.image.manifest.v1+json')
        body, ctype = upstream('manifests/1')
        if kind == 'arm':
            d = 'sha256:' + hashlib.sha256(body).hexdigest()
            ents = [{'mediaType': ctype, 'digest': d, 'size': len(body),
                     'platform': {'os': 'linux', 'architecture': a}}
                    for a in ('arm64', 'ppc64le')]
            ents.append({'mediaType': ctype, 'digest': d, 'size': len(body),
                         'platform': {'os': 'unknown', 'architecture': 'unknown'}})
            if ref.startswith('sha256:'):
                return self.send(200, body, ctype)
            b = json.dumps({'schemaVersion': 2, 'manifests': ents,
                            'mediaType': 'application/vnd.oci.image.index.v1+json'}).encode()
            return self.send(200, b, 'application/vnd.oci.image.index.v1+json')
        if kind == 'ctype':
            m = json.loads(body)
            m['mediaType'] = 'application/vnd.oci.image.manifest.v1+json'
            return self.send(200, json.dumps(m).encode(),
                             'application/vnd.docker.distribution.manifest.v2+json')
        self.send(200, body, ctype, [('Docker-Content-Digest',
                                      'sha256:' + hashlib.sha256(body).hexdigest())])

    def blob(self, kind, digest):
        body, _ = upstream('blobs/' + digest)
        if kind == 'mismatch':
            body = bytes([body[0] ^ 1]) + body[1:]
        elif kind == 'short':
            body = body[:-10] if len(body) > 10 else b''
        elif kind == 'long':
            body = body + b'0123456789'
        if kind != 'slow':
            return self.send(200, body, 'application/octet-stream')
        self.send_response(200)
        self.send_header('Content-Type', 'application/octet-stream')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        for i in range(0, len(body), 65536):
            self.wfile.write(body[i:i + 65536])
            self.wfile.flush()
            time.sleep(0.0625)

    def do_GET(self):
        p = self.path.split('?')[0]
        if p in ('/v2/', '/v2'):
            return self.send(200, b'{}')
        parts = p.split('/')  # '', v2, fault, KIND, manifests|blobs, REF
        if len(parts) != 6 or parts[2] != 'fault':
            return self.error(404, 'NAME_UNKNOWN', 'repository name not known')
        kind, what, ref = parts[3], parts[4], parts[5]
        COUNT[kind] = COUNT.get(kind, 0) + 1
        if kind == 'redirect':
            if not self.headers.get('Authorization', '').startswith('Basic '):
                return self.error(401, 'UNAUTHORIZED', 'authentication required',
                                  [('WWW-Authenticate', 'Basic realm="fault"')])
            if what == 'blobs':
                loc = 'http://localhost:%s/v2/fault/sawauth/blobs/%s' % (sys.argv[1], ref)
                return self.send(307, b'', extra=[('Location', loc)])
        if kind == 'sawauth':
            print('sawauth=%s' % ('yes' if self.headers.get('Authorization') else 'no'),
                  flush=True)
        if kind == '401':
            return self.error(401, 'UNAUTHORIZED', 'authentication required',
                              [('WWW-Authenticate', 'Basic realm="fault"')])
        if kind == '403':
            return self.error(403, 'DENIED', 'requested access to the resource is denied')
        if kind == '404':
            return self.error(404, 'MANIFEST_UNKNOWN', 'manifest unknown')
        if (kind == '429' and COUNT[kind] <= 2) or kind == 'busy':
            return self.error(429, 'TOOMANYREQUESTS', 'slow down', [('Retry-After', '1')])
        try:
            if what == 'manifests':
                return self.manifest(kind, ref)
            return self.blob(kind, ref)
        except urllib.error.HTTPError as e:
            return self.error(e.code, 'UPSTREAM', str(e))

    do_HEAD = do_GET


ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
