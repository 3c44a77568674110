// The conformance suite cannot send a credential; Airlock's /mcp requires one. This proxy
// passes every request through to the daemon unchanged (Host and Origin included, so the
// DNS-rebinding scenario still reaches the daemon's checks) with the API key added, and
// streams the answers back as they come (SSE). Prints the port it listens on (0: any).
//   node auth_proxy.mjs LISTEN_PORT UPSTREAM_PORT API_KEY
import http from "node:http";

const [listenPort, upstreamPort, apiKey] = process.argv.slice(2);
if (!listenPort || !upstreamPort || !apiKey) {
  console.error("usage: auth_proxy.mjs LISTEN_PORT UPSTREAM_PORT API_KEY");
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${apiKey}` };
  const upstream = http.request(
    { host: "127.0.0.1", port: Number(upstreamPort), method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      res.flushHeaders();
      answer.pipe(res);
    },
  );
  upstream.on("error", () => res.destroy());
  res.on("close", () => upstream.destroy());  // the client left: so does the upstream request
  req.pipe(upstream);
});

server.listen(Number(listenPort), "127.0.0.1", () => console.log(server.address().port));
