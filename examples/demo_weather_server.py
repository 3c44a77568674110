"""The demo's stand-in for a weather API, on 127.0.0.1:8751 (the weather tool's one allowed host)."""
import http.server
import json
import sys
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        city = query.get("city", ["nowhere"])[0]
        body = json.dumps({"city": city, "tomorrow": "sunny", "high_c": 21}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8751
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
