#!/usr/bin/python3
"""tokserver.py PORT KEY CERT - a Bearer token server for docker-registry
(distribution's token.md) for the pull tests: alice:s3cret gets what she
asks for, anonymous users get pull on public/* only, others a 401. Each
request is logged (without the Authorization value) to stdout.
From ../shared/reference/oci-import.md section 7."""
import base64
import json
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

KEY = open(sys.argv[2]).read()
X5C = base64.b64encode(x509.load_pem_x509_certificate(
    open(sys.argv[3], 'rb').read()).public_bytes(Encoding.DER)).decode()


class H(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        print(fmt % args, flush=True)

    def do_GET(self):
        q, user = parse_qs(urlparse(self.path).query), None
        a = self.headers.get('Authorization', '')
        print('auth=' + a.split(' ')[0], flush=True)
        if a.startswith('Basic '):
            n, _, p = base64.b64decode(a[6:]).decode().partition(':')
            if (n, p) != ('alice', 's3cret'):
                self.send_response(401)
                self.end_headers()
                return
            user = n
        acc = []
        for s in q.get('scope', []):
            parts = s.split(':')
            t, name, acts = parts[0], ':'.join(parts[1:-1]), parts[-1].split(',')
            acc.append({'type': t, 'name': name, 'actions': acts if user else
                        [x for x in acts if x == 'pull' and name.startswith('public/')]})
        now = int(time.time())
        tok = jwt.encode({'iss': 'test-issuer', 'sub': user or '',
                          'aud': q.get('service', [''])[0], 'exp': now + 300,
                          'nbf': now - 10, 'iat': now, 'jti': uuid.uuid4().hex,
                          'access': acc}, KEY, algorithm='RS256',
                         headers={'x5c': [X5C]})
        b = json.dumps({'token': tok, 'access_token': tok, 'expires_in': 300}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(b)))
        self.end_headers()
        self.wfile.write(b)


ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
