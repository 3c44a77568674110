// The Kubernetes API-server stand-in for the kubernetes backend's tests. Not a cluster: it
// speaks the API's wire format (JSON objects, Status errors, chunked watch streams, pod logs)
// over TLS with a bearer token, validates every object it receives against the official
// schemas (kubernetes-models), and plays a pod's lifecycle from its image's name:
//   .../ok  .../exit3  .../oom  .../deadline  .../pullfail  .../stuck  .../sleep  .../patient
//   .../fetch (GETs $FETCH_URL through its $HTTP_PROXY, as a real tool in the pod would)
// Faults are queued through POST /standin/faults; GET /standin/state shows what it holds.
// Env: STANDIN_CERT, STANDIN_KEY (PEM files), STANDIN_TOKEN. Prints "listening PORT".
import http from "node:http";
import https from "node:https";
import fs from "node:fs";
import { randomUUID } from "node:crypto";
import { schemaErrors } from "./schemas.mjs";
import { burn, cpuOf, handleExecUpgrade, killPod } from "./exec.mjs";

const token = process.env.STANDIN_TOKEN;
const RESOURCES = {
  pods: { kind: "Pod", apiVersion: "v1", group: "/api/v1" },
  secrets: { kind: "Secret", apiVersion: "v1", group: "/api/v1" },
  networkpolicies: { kind: "NetworkPolicy", apiVersion: "networking.k8s.io/v1", group: "/apis/networking.k8s.io/v1" },
};

let resourceVersion = 1000;
const store = { pods: new Map(), secrets: new Map(), networkpolicies: new Map() };
const history = [];     // pod watch events: {rv, type, object}
const watchers = new Set();
const faults = [];      // {status, method, resource, retryAfter, count} or {kind: "broken-watch", count}
const requests = [];    // {method, path}
const violations = [];  // what a real cluster would have made of the backend's mistakes
const created = [];     // every object received, as received
const execs = [];       // every pods/exec: {pod, command, protocol, tty, stdin, resizes, stdinClosed, exitCode}

function statusBody(code, reason, message) {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code };
}
function send(res, code, body, headers = {}) {
  res.writeHead(code, { "Content-Type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
function fail(res, code, reason, message, headers) { send(res, code, statusBody(code, reason, message), headers); }

function emit(type, pod) {
  const event = { rv: Number(pod.metadata.resourceVersion), type, object: structuredClone(pod) };
  history.push(event);
  for (const watcher of watchers) watcher(event);
}
function bump(object) { object.metadata.resourceVersion = String(++resourceVersion); }

function behaviour(pod) {
  const image = pod.spec.containers[0].image;
  return image.slice(image.lastIndexOf("/") + 1).split(":")[0];
}

function setPhase(pod, status) {
  if (!store.pods.has(pod.metadata.name)) return;
  pod.status = { ...pod.status, ...status };
  bump(pod);
  emit("MODIFIED", pod);
}

function containerStatus(pod, state) {
  return [{ name: "tool", image: pod.spec.containers[0].image, ready: false, restartCount: 0, state }];
}

function secretText(pod, key) {
  const secret = store.secrets.get(pod.metadata.name);
  const value = secret && secret.data && secret.data[key];
  return value === undefined ? undefined : Buffer.from(value, "base64").toString();
}

// What the tool "printed": its argv, its stdin and the names of its env, as JSON.
function toolOutput(pod) {
  const c = pod.spec.containers[0];
  const env = {};
  for (const e of c.env || []) {
    env[e.name] = e.valueFrom ? `secret:${secretText(pod, e.valueFrom.secretKeyRef.key) ?? "MISSING"}` : e.value;
  }
  return JSON.stringify({ command: c.command, stdin: secretText(pod, "stdin") ?? "MISSING", env }) + "\n";
}

// The pod's env as the kubelet would give it: plain values, secretKeyRefs resolved.
function podEnv(pod) {
  const env = {};
  for (const e of pod.spec.containers[0].env || [])
    env[e.name] = e.valueFrom ? secretText(pod, e.valueFrom.secretKeyRef.key) : e.value;
  return env;
}

// fetch: one GET of $FETCH_URL through $HTTP_PROXY (credentials from its userinfo), and what
// came back: {"status", "body"} or {"error"}.
function fetchThroughProxy(pod) {
  const env = podEnv(pod);
  return new Promise((resolve) => {
    if (!env.HTTP_PROXY) return resolve({ error: "no HTTP_PROXY in the pod's env" });
    const proxy = new URL(env.HTTP_PROXY);
    const target = new URL(env.FETCH_URL);
    const headers = { Host: target.host };
    if (proxy.username)
      headers["Proxy-Authorization"] = "Basic " + Buffer.from(
        `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64");
    const req = http.request({ host: proxy.hostname, port: proxy.port, path: target.href, headers }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("error", (e) => resolve({ error: e.message }));
    req.end();
  });
}

function checkStartable(pod) {
  const name = pod.metadata.name;
  if (!store.secrets.has(name)) violations.push(`pod ${name} started before its Secret existed`);
  const policy = [...store.networkpolicies.values()].find(
    (p) => p.spec.podSelector.matchLabels && p.spec.podSelector.matchLabels["airlock.dev/pod"] === pod.metadata.labels["airlock.dev/pod"]);
  if (!policy) violations.push(`pod ${name} started before a NetworkPolicy selected it`);
}

function run(pod) {
  checkStartable(pod);
  const kind = behaviour(pod);
  const step = (ms, f) => setTimeout(f, ms);
  setPhase(pod, { phase: "Pending", conditions: [{ type: "PodScheduled", status: "True" }] });
  if (kind === "stuck") {
    setPhase(pod, { conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable",
      message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu." }] });
    return;
  }
  if (kind === "pullfail") {
    step(10, () => setPhase(pod, { containerStatuses: containerStatus(pod, { waiting: { reason: "ErrImagePull", message: "manifest unknown" } }) }));
    step(20, () => setPhase(pod, { containerStatuses: containerStatus(pod, { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } }) }));
    return;
  }
  step(10, () => setPhase(pod, { phase: "Running", startTime: new Date().toISOString(),
    containerStatuses: containerStatus(pod, { running: { startedAt: new Date().toISOString() } }) }));
  if (kind === "sleep") return;
  if (kind === "fetch") {
    step(10, () => fetchThroughProxy(pod).then((fetched) => { pod.fetched = fetched; finish(pod, OK_END, 5); }));
    return;
  }
  // patient: ends only once an unbroken watch follows it (the broken-watch tests' pod).
  if (kind === "patient") { pod.patient = true; step(10, () => finishIfWatched(pod)); return; }
  const ends = {
    ok: { phase: "Succeeded", state: { terminated: { exitCode: 0, reason: "Completed", message: "a line on stderr" } } },
    exit3: { phase: "Failed", state: { terminated: { exitCode: 3, reason: "Error", message: "it went wrong" } } },
    oom: { phase: "Failed", state: { terminated: { exitCode: 137, reason: "OOMKilled" } } },
    deadline: { phase: "Failed", reason: "DeadlineExceeded", state: { terminated: { exitCode: 137, reason: "Error" } } },
  };
  finish(pod, ends[kind] || ends.ok, 30);
}

const OK_END = { phase: "Succeeded", state: { terminated: { exitCode: 0, reason: "Completed", message: "a line on stderr" } } };

function finishIfWatched(pod) {
  if (pod.patient && pod.status.phase === "Running" && pod.unbrokenWatches > 0) { pod.patient = false; finish(pod, OK_END, 5); }
}

function finish(pod, end, ms) {
  setTimeout(() => {
    pod.log = behaviour(pod) === "bigout" ? "x".repeat(5000)
      : pod.fetched ? JSON.stringify(pod.fetched) + "\n" : toolOutput(pod);
    setPhase(pod, { phase: end.phase, ...(end.reason ? { reason: end.reason, message: "Pod was active on the node longer than the specified deadline" } : {}),
      containerStatuses: containerStatus(pod, end.state) });
  }, ms);
}

function takeFault(method, resource, isWatch) {
  const i = faults.findIndex((f) => isWatch ? f.kind === "broken-watch" :
    !f.kind && (!f.method || f.method === method) && (!f.resource || f.resource === resource));
  if (i < 0) return null;
  const f = faults[i];
  if (--f.count <= 0) faults.splice(i, 1);
  return f;
}

function readBody(req) {
  return new Promise((resolve) => { let b = ""; req.on("data", (c) => (b += c)); req.on("end", () => resolve(b)); });
}

function parseJson(res, text) {
  try { return JSON.parse(text); } catch { fail(res, 400, "BadRequest", "the body is not JSON"); return undefined; }
}

function matches(object, selector) {
  if (!selector) return true;
  return selector.split(",").every((term) => {
    const [k, v] = term.split("=");
    return (object.metadata.labels || {})[k] === v;
  });
}

function create(res, resource, ns, body) {
  const meta = RESOURCES[resource];
  const object = parseJson(res, body);
  if (object === undefined) return;
  created.push(structuredClone(object));
  const errors = schemaErrors(object, meta.kind, { strict: true });
  if (errors) { violations.push(`invalid ${meta.kind}: ${errors}`); return fail(res, 422, "Invalid", `${meta.kind} is invalid: ${errors}`); }
  if (object.metadata.namespace && object.metadata.namespace !== ns) return fail(res, 400, "BadRequest", "the namespace of the object does not match the namespace on the request");
  const name = object.metadata.name;
  if (store[resource].has(name)) return fail(res, 409, "AlreadyExists", `${resource} "${name}" already exists`);
  for (const owner of object.metadata.ownerReferences || []) {
    const pod = store.pods.get(owner.name);
    if (!pod || pod.metadata.uid !== owner.uid) violations.push(`${meta.kind} ${name} names an owner that does not exist`);
  }
  object.metadata = { ...object.metadata, namespace: ns, uid: randomUUID(), creationTimestamp: new Date().toISOString() };
  bump(object);
  store[resource].set(name, object);
  if (resource === "pods") {
    object.status = { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False", reason: "SchedulingGated" }] };
    emit("ADDED", object);
  }
  send(res, 201, object);
  if (resource === "pods" && !(object.spec.schedulingGates || []).length) run(object);
}

// The JSON patch ops the backend uses (test, remove), then the pod revalidated.
function patch(res, name, body, contentType) {
  const pod = store.pods.get(name);
  if (!pod) return fail(res, 404, "NotFound", `pods "${name}" not found`);
  if (contentType !== "application/json-patch+json") return fail(res, 415, "UnsupportedMediaType", `${contentType} is not supported here`);
  const ops = parseJson(res, body);
  if (ops === undefined) return;
  const updated = structuredClone(pod);
  for (const op of ops) {
    const parts = op.path.split("/").slice(1);
    let parent = updated;
    for (const p of parts.slice(0, -1)) parent = parent?.[p];
    const last = parts[parts.length - 1];
    if (op.op === "test" && JSON.stringify(parent?.[last]) !== JSON.stringify(op.value)) return fail(res, 422, "Invalid", `the test of ${op.path} failed`);
    if (op.op === "remove") { if (!parent || !(last in parent)) return fail(res, 422, "Invalid", `${op.path} does not exist`); delete parent[last]; }
    if (op.op !== "test" && op.op !== "remove") return fail(res, 422, "Invalid", `op ${op.op} is not supported by the stand-in`);
  }
  const errors = schemaErrors({ apiVersion: updated.apiVersion, kind: updated.kind, metadata: { name }, spec: updated.spec }, "Pod", { strict: true });
  if (errors) return fail(res, 422, "Invalid", `Pod is invalid: ${errors}`);
  const wasGated = (pod.spec.schedulingGates || []).length > 0;
  pod.spec = updated.spec;
  bump(pod);
  emit("MODIFIED", pod);
  send(res, 200, pod);
  if (wasGated && !(pod.spec.schedulingGates || []).length) run(pod);
}

function remove(res, resource, name) {
  const object = store[resource].get(name);
  if (!object) return fail(res, 404, "NotFound", `${resource} "${name}" not found`);
  store[resource].delete(name);
  if (resource === "pods") {
    killPod(object);
    bump(object);
    emit("DELETED", object);
    for (const owned of ["secrets", "networkpolicies"]) {
      for (const [n, o] of store[owned]) {
        if ((o.metadata.ownerReferences || []).some((r) => r.uid === object.metadata.uid)) store[owned].delete(n);
      }
    }
  }
  send(res, 200, object);
}

function watch(req, res, url) {
  const field = url.searchParams.get("fieldSelector") || "";
  const name = field.startsWith("metadata.name=") ? field.slice("metadata.name=".length) : null;
  const since = Number(url.searchParams.get("resourceVersion") || 0);
  const seconds = Number(url.searchParams.get("timeoutSeconds") || 1800);
  const broken = takeFault("GET", "pods", true);
  res.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
  res.flushHeaders();
  const write = (event) => {
    if (name && event.object.metadata.name !== name) return;
    if (event.rv <= since) return;
    if (broken) { res.write(JSON.stringify({ type: event.type, object: event.object }).slice(0, 40)); res.socket.destroy(); return; }
    res.write(JSON.stringify({ type: event.type, object: event.object }) + "\n");
  };
  for (const event of history) write(event);
  if (broken) {  // mid-stream: half an event, then the connection is gone
    if (res.socket && !res.socket.destroyed) { res.write('{"type":"MODIFIED","obj'); setTimeout(() => res.socket?.destroy(), 5); }
    return;
  }
  watchers.add(write);
  const followed = name && store.pods.get(name);
  if (followed) { followed.unbrokenWatches = (followed.unbrokenWatches || 0) + 1; finishIfWatched(followed); }
  const timer = setTimeout(() => res.end(), seconds * 1000);
  req.on("close", () => { watchers.delete(write); clearTimeout(timer); });
}

function list(res, resource, url) {
  const selector = url.searchParams.get("labelSelector");
  const meta = RESOURCES[resource];
  const items = [...store[resource].values()].filter((o) => matches(o, selector));
  send(res, 200, { kind: `${meta.kind}List`, apiVersion: meta.apiVersion, metadata: { resourceVersion: String(resourceVersion) }, items });
}

function logs(res, name, url) {
  const pod = store.pods.get(name);
  if (!pod) return fail(res, 404, "NotFound", `pods "${name}" not found`);
  if (url.searchParams.get("container") !== "tool") return fail(res, 400, "BadRequest", "container tool is the only one");
  let text = pod.log || "";
  const limit = Number(url.searchParams.get("limitBytes") || 0);
  if (limit > 0) text = text.slice(0, limit);
  res.writeHead(200, { "Content-Type": "text/plain" });
  res.end(text);
}

function control(req, res, url, body) {
  if (url.pathname === "/standin/faults" && req.method === "POST") {
    const f = parseJson(res, body);
    if (f === undefined) return;
    faults.push({ count: 1, ...f });
    return send(res, 200, { queued: faults.length });
  }
  // A node lost under a pod: it fails (phase Failed, reason NodeLost) and its commands end.
  const lost = /^\/standin\/pods\/([a-z0-9.-]+)\/node-lost$/.exec(url.pathname);
  if (lost && req.method === "POST") {
    const pod = store.pods.get(lost[1]);
    if (!pod) return fail(res, 404, "NotFound", `pods "${lost[1]}" not found`);
    killPod(pod);
    setPhase(pod, { phase: "Failed", reason: "NodeLost", message: "Node standin-node-1 which was running pod " + lost[1] + " is unresponsive" });
    return send(res, 200, pod);
  }
  // A process left in the pod's background uses CPU: {user_ms, sys_ms} added to its counter.
  const burned = /^\/standin\/pods\/([a-z0-9.-]+)\/burn$/.exec(url.pathname);
  if (burned && req.method === "POST") {
    const pod = store.pods.get(burned[1]);
    if (!pod) return fail(res, 404, "NotFound", `pods "${burned[1]}" not found`);
    const used = parseJson(res, body);
    if (used === undefined) return;
    burn(pod, used.user_ms, used.sys_ms);
    return send(res, 200, cpuOf(pod));
  }
  if (url.pathname === "/standin/state") {
    const cpu = Object.fromEntries([...store.pods].map(([name, pod]) => [name, cpuOf(pod)]));
    const names = (m) => [...m.keys()];
    return send(res, 200, { pods: names(store.pods), secrets: names(store.secrets), networkpolicies: names(store.networkpolicies),
      objects: { pods: [...store.pods.values()], secrets: [...store.secrets.values()], networkpolicies: [...store.networkpolicies.values()] },
      requests, violations, faults, created, execs, cpu });
  }
  fail(res, 404, "NotFound", "no such control endpoint");
}

const ROUTE = /^(\/api\/v1|\/apis\/networking\.k8s\.io\/v1)\/namespaces\/([a-z0-9-]+)\/(pods|secrets|networkpolicies)(?:\/([a-z0-9.-]+))?(\/log)?$/;

async function handle(req, res) {
  const url = new URL(req.url, "https://standin");
  const body = await readBody(req);
  if (req.headers.authorization !== `Bearer ${token}`) return fail(res, 401, "Unauthorized", "Unauthorized");
  if (url.pathname.startsWith("/standin/")) return control(req, res, url, body);
  requests.push({ method: req.method, path: url.pathname + url.search });
  const m = ROUTE.exec(url.pathname);
  if (!m || RESOURCES[m[3]].group !== m[1]) return fail(res, 404, "NotFound", `the server could not find the requested resource (${url.pathname})`);
  const [, , ns, resource, name, isLog] = m;
  const injected = !(req.method === "GET" && url.searchParams.get("watch")) && takeFault(req.method, resource, false);
  if (injected) {
    const headers = injected.retryAfter !== undefined ? { "Retry-After": String(injected.retryAfter) } : {};
    return fail(res, injected.status, injected.reason || "Injected", injected.message || `injected ${injected.status}`, headers);
  }
  if (req.method === "POST" && !name) return create(res, resource, ns, body);
  if (req.method === "GET" && !name && url.searchParams.get("watch") === "true" && resource === "pods") return watch(req, res, url);
  if (req.method === "GET" && !name) return list(res, resource, url);
  if (req.method === "GET" && isLog && resource === "pods") return logs(res, name, url);
  if (req.method === "GET" && name) {
    const object = store[resource].get(name);
    return object ? send(res, 200, object) : fail(res, 404, "NotFound", `${resource} "${name}" not found`);
  }
  if (req.method === "PATCH" && resource === "pods" && name) return patch(res, name, body, req.headers["content-type"]);
  if (req.method === "DELETE" && name) return remove(res, resource, name);
  fail(res, 405, "MethodNotAllowed", `${req.method} is not supported by the stand-in here`);
}

const server = https.createServer({ cert: fs.readFileSync(process.env.STANDIN_CERT), key: fs.readFileSync(process.env.STANDIN_KEY) },
  (req, res) => { handle(req, res).catch((e) => { try { fail(res, 500, "InternalError", String(e)); } catch {} }); });
// pods/exec (exec.mjs): the WebSocket upgrade.
server.on("upgrade", (req, socket) => {
  requests.push({ method: req.method, path: req.url });
  const takeFault = (kind) => {
    const i = faults.findIndex((f) => f.kind === kind);
    if (i < 0) return false;
    if (--faults[i].count <= 0) faults.splice(i, 1);
    return true;
  };
  socket.on("error", () => {});
  handleExecUpgrade(req, socket, { token, store, execs, takeFault });
});
server.listen(0, "127.0.0.1", () => { process.stdout.write(`listening ${server.address().port}\n`); });
process.stdin.on("end", () => process.exit(0));  // the test's end closes our stdin
process.stdin.resume();
