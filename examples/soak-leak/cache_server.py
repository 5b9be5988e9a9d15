# A server with a bounded cache: keeps 1 KiB per request for the last
# 4000 request ids, so memory grows for 4000 requests, then stays flat.
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
cache = {}
n = 0
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        global n
        n += 1
        cache[n % 4000] = bytearray(b"x" * 1024)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
