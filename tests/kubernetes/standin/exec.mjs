// pods/exec for the API-server stand-in: the WebSocket upgrade (RFC 6455, written out here:
// the stand-in's packages have no WebSocket library) and the channel protocol of
// v5.channel.k8s.io / v4.channel.k8s.io (channel byte first: 0 stdin, 1 stdout, 2 stderr,
// 3 the exec's v1 Status, 4 resize {"Width","Height"}; v5's 255 CHANNEL closes a channel).
// Like the rest of the stand-in it runs nothing on the host: a pod's commands are played by a
// fake runner over an in-memory filesystem of the pod (/work and /tmp), for the commands the
// backend sends (its exec wrapper, kill, tar -c/-x, rm -d, mv -T, mkdir -p, cat of the pod's
// cgroup CPU counter) and a few for the tests (cat, echo, sleep, standin-fail CODE TEXT,
// standin-winsize, standin-burn USER_MS SYS_MS, standin-mcp: an MCP server on stdio, and
// `python3 -c ...`: a session's code interpreter, played).
import { createHash } from "node:crypto";

export const WRAPPER = 'echo $$ >"$0" && cd "$1" && shift && exec "$@"';
export const KILLER = 'kill -"$0" "$(cat "$1")"';
export const CPU_STAT_V2 = "/sys/fs/cgroup/cpu.stat";
export const CPU_STAT_V1 = "/sys/fs/cgroup/cpuacct/cpuacct.stat";

// --- the pod's CPU counter, in microseconds, as its container's cgroup would count it: it
// grows by what standin-burn and burn() (a process in the background) "use", never otherwise.
const cpuCounters = new WeakMap();
export function cpuOf(pod) {
  if (!cpuCounters.has(pod)) cpuCounters.set(pod, { user_usec: 0, system_usec: 0 });
  return cpuCounters.get(pod);
}
export function burn(pod, userMs, sysMs) {
  const cpu = cpuOf(pod);
  cpu.user_usec += Math.round(Number(userMs || 0) * 1000);
  cpu.system_usec += Math.round(Number(sysMs || 0) * 1000);
}
// What `cat` finds at a cgroup path under `layout` ("v2", "v1", "missing", "garbage"): the
// file's text, or undefined when it does not exist there. v1 counts in USER_HZ ticks (10 ms).
function cgroupFile(pod, path, layout) {
  const cpu = cpuOf(pod);
  if (path === CPU_STAT_V2 && layout === "v2")
    return `usage_usec ${cpu.user_usec + cpu.system_usec}\nuser_usec ${cpu.user_usec}\nsystem_usec ${cpu.system_usec}\n` +
      "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n";
  if (path === CPU_STAT_V2 && layout === "garbage") return "user_usec lots\nsystem_usec\n";
  if (path === CPU_STAT_V1 && layout === "v1")
    return `user ${Math.floor(cpu.user_usec / 10000)}\nsystem ${Math.floor(cpu.system_usec / 10000)}\n`;
  return undefined;
}
export const readsCgroup = (argv) => argv[0] === "cat" && argv.slice(1).some((p) => p.startsWith("/sys/fs/cgroup/"));

function frame(opcode, payload) {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n])
    : n < 65536 ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 255])
    : (() => { const b = Buffer.alloc(10); b[0] = 0x80 | opcode; b[1] = 127; b.writeBigUInt64BE(BigInt(n), 2); return b; })();
  return Buffer.concat([head, payload]);
}

// Client frames (masked) into whole messages.
function frameReader(onMessage, onClose, onPing) {
  let pending = Buffer.alloc(0);
  let parts = [];
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (pending.length < 2) return;
      const fin = pending[0] & 0x80, opcode = pending[0] & 0x0f, masked = pending[1] & 0x80;
      let len = pending[1] & 0x7f, at = 2;
      if (len === 126) { if (pending.length < 4) return; len = pending.readUInt16BE(2); at = 4; }
      else if (len === 127) { if (pending.length < 10) return; len = Number(pending.readBigUInt64BE(2)); at = 10; }
      const maskAt = at; if (masked) at += 4;
      if (pending.length < at + len) return;
      const payload = Buffer.from(pending.subarray(at, at + len));
      if (masked) for (let i = 0; i < len; i++) payload[i] ^= pending[maskAt + (i & 3)];
      pending = pending.subarray(at + len);
      if (opcode === 0x8) return onClose();
      if (opcode === 0x9) { onPing(payload); continue; }
      if (opcode === 0xa) continue;
      parts.push(payload);
      if (fin) { const whole = Buffer.concat(parts); parts = []; onMessage(whole); }
    }
  };
}

// --- the pod's filesystem: path -> {dir: true} | {data: Buffer}
function podFs(pod) {
  if (!pod.fs) pod.fs = new Map([["/", { dir: true }], ["/work", { dir: true }], ["/tmp", { dir: true }]]);
  return pod.fs;
}
function normal(path, cwd = "/work") {
  const parts = [];
  for (const p of (path.startsWith("/") ? path : `${cwd}/${path}`).split("/")) {
    if (p === "" || p === ".") continue;
    if (p === "..") parts.pop(); else parts.push(p);
  }
  return "/" + parts.join("/");
}
const parent = (p) => p.slice(0, p.lastIndexOf("/")) || "/";
const writable = (p) => p === "/work" || p.startsWith("/work/") || p === "/tmp" || p.startsWith("/tmp/");

// --- ustar, as tar -c writes one file and tar -x reads it
function tarHeader(name, size, type) {
  const h = Buffer.alloc(512);
  h.write(name.slice(0, 100), 0, 100);
  h.write("0000644\0", 100); h.write("0177776\0", 108); h.write("0177776\0", 116);
  h.write(size.toString(8).padStart(11, "0") + "\0", 124);
  h.write(Math.floor(Date.now() / 1000).toString(8).padStart(11, "0") + "\0", 136);
  h.write("        ", 148); h.write(type, 156); h.write("ustar  \0", 257);  // GNU tar's magic
  let sum = 0; for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
  return h;
}
const padded = (data) => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
// As GNU tar's default format writes it: a name over 100 bytes first as a ././@LongLink entry.
function tarOf(name, data, type = "0") {
  const parts = [];
  if (name.length > 100) {
    const long = Buffer.from(name + "\0");
    parts.push(tarHeader("././@LongLink", long.length, "L"), padded(long));
  }
  parts.push(tarHeader(name, data.length, type), padded(data), Buffer.alloc(1024));
  return Buffer.concat(parts);
}
function untar(buf) {
  const out = [];
  for (let at = 0; at + 512 <= buf.length;) {
    const h = buf.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const name = h.subarray(0, 100).toString().replace(/\0.*$/s, "");
    const prefix = h.subarray(345, 500).toString().replace(/\0.*$/s, "");
    const size = parseInt(h.subarray(124, 136).toString().replace(/\0.*$/s, "").trim() || "0", 8);
    const type = String.fromCharCode(h[156] || 48);
    out.push({ name: prefix ? `${prefix}/${name}` : name, type, data: Buffer.from(buf.subarray(at + 512, at + 512 + size)) });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

// Whether `buf` holds a whole archive: entries up to the two empty blocks.
function archiveComplete(buf) {
  for (let at = 0; at + 512 <= buf.length;) {
    const h = buf.subarray(at, at + 512);
    if (h.every((b) => b === 0)) return at + 1024 <= buf.length;
    const size = parseInt(h.subarray(124, 136).toString().replace(/\0.*$/s, "").trim() || "0", 8);
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return false;
}

let nextPid = 100;

// One process of the fake runner: io = {out(buf), err(buf), exit(code)}; returns
// {stdin(buf), stdinEnd(), resize(w, h), signal(n)}.
function spawn(pod, argv, io, cgroupLayout = "v2") {
  const fs = podFs(pod);
  const proc = { pid: ++nextPid, stdin() {}, stdinEnd() {}, resize() {}, signal(n) { end(128 + n); } };
  let ended = false;
  const end = (code) => { if (!ended) { ended = true; pod.procs?.delete(proc.pid); io.exit(code); } };
  const fail = (code, text) => { io.err(Buffer.from(text + "\n")); end(code); };
  pod.procs = pod.procs || new Map();
  pod.procs.set(proc.pid, proc);
  let cwd = "/work";
  if (argv[0] === "/bin/sh" && argv[1] === "-c" && argv[2] === WRAPPER) {
    const pidfile = normal(argv[3]);
    if (!writable(parent(pidfile)) || !fs.get(parent(pidfile))?.dir) { fail(1, `sh: can't create ${argv[3]}`); return proc; }
    fs.set(pidfile, { data: Buffer.from(`${proc.pid}\n`) });
    cwd = normal(argv[4]);
    if (!fs.get(cwd)?.dir) { fail(2, `sh: cd: can't cd to ${argv[4]}`); return proc; }
    argv = argv.slice(5);
    if (argv[0] === "env") {  // env -- NAME=VALUE... COMMAND
      argv = argv.slice(argv[1] === "--" ? 2 : 1);
      while (argv.length && argv[0].includes("=")) argv = argv.slice(1);
    }
  }
  const cmd = (argv[0] || "").slice((argv[0] || "").lastIndexOf("/") + 1);
  const args = argv.slice(1);
  const setImmediateEnd = (code) => setImmediate(() => end(code));
  switch (cmd) {
    case "cat":
      if (args.length) { catFiles(pod, args, io, cgroupLayout, setImmediateEnd); break; }
      proc.stdin = (b) => io.out(b); proc.stdinEnd = () => end(0);
      break;
    case "standin-burn": burn(pod, args[0], args[1]); setImmediateEnd(0); break;
    case "echo": io.out(Buffer.from(args.join(" ") + "\n")); setImmediateEnd(0); break;
    case "standin-fail": io.out(Buffer.from("some output\n")); io.err(Buffer.from(args.slice(1).join(" ") + "\n")); setImmediateEnd(Number(args[0])); break;
    case "sleep": { const t = setTimeout(() => end(0), Number(args[0]) * 1000); proc.signal = (n) => { clearTimeout(t); end(128 + n); }; break; }
    case "standin-winsize":
      proc.resize = (w, h) => io.out(Buffer.from(`${h}x${w}\n`));
      proc.stdin = (b) => { if (b.includes("q")) end(0); };
      proc.stdinEnd = () => end(0);
      break;
    case "sh":
      if (args[0] === "-c" && args[1] === KILLER) {
        const target = fs.get(normal(args[3]));
        if (!target || target.dir) { fail(1, `cat: can't open '${args[3]}': No such file or directory`); break; }
        const victim = pod.procs.get(Number(target.data.toString()));
        if (!victim) { fail(1, "sh: kill: No such process"); break; }
        victim.signal(Number(args[2]));
        setImmediateEnd(0);
        break;
      }
      fail(127, `sh: the stand-in's fake runner does not run scripts: ${args.join(" ")}`);
      break;
    case "standin-mcp": runMcpServer(pod, proc, io, end); break;
    case "python3":
      if (args[0] === "-c") { runInterpreter(pod, proc, io, end); break; }
      fail(127, "python3: the stand-in's fake runner plays the session's interpreter (python3 -c) only");
      break;
    case "tar": runTar(pod, args, proc, io, fail, setImmediateEnd); break;
    case "rm": case "mv": case "mkdir": fileCommand(pod, cmd, args, fail, setImmediateEnd); break;
    default: fail(127, `${argv[0]}: not found`);
  }
  return proc;
}

// The session's code interpreter (python3 -c airlock_interpreter.py), played: "ready", then an
// answer for each cell of JSON lines on its stdin. A cell runs no Python: each
// `standin_burn(USER_MS, SYS_MS)` in its code adds to the pod's CPU counter, as a cell that
// computes would; its stdout names what it burnt.
function runInterpreter(pod, proc, io, end) {
  let pending = "";
  io.out(Buffer.from('{"ready": true}\n'));
  const cell = (request) => {
    let stdout = "";
    for (const m of String(request.code || "").matchAll(/standin_burn\((\d+),\s*(\d+)\)/g)) {
      burn(pod, m[1], m[2]);
      stdout += `burnt ${m[1]} ${m[2]}\n`;
    }
    const answer = { id: request.id, stdout, stderr: "", stdout_bytes: stdout.length, stderr_bytes: 0, images: [] };
    io.out(Buffer.from(JSON.stringify(answer) + "\n"));
  };
  proc.stdin = (b) => {
    pending += b.toString();
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim()) cell(JSON.parse(line));
    }
  };
  proc.stdinEnd = () => end(0);
}

// A third-party MCP server in the pod (stdio, newline-delimited JSON-RPC): the tool `where`,
// whose answer names the pod it runs in, and `burn` {user_ms, sys_ms}, which adds to the pod's
// CPU counter as a call that computes would; each call is logged on stderr.
function runMcpServer(pod, proc, io, end) {
  let pending = "";
  const send = (msg) => io.out(Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n"));
  const answer = (req) => {
    if (req.method === "initialize")
      return send({ id: req.id, result: { protocolVersion: req.params?.protocolVersion ?? "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "standin-mcp", version: "1.0.0" } } });
    if (req.method === "tools/list")
      return send({ id: req.id, result: { tools: [
        { name: "where", description: "Names the pod it runs in", inputSchema: { type: "object", properties: {} } },
        { name: "burn", description: "Uses CPU in the pod", inputSchema: { type: "object", properties: { user_ms: { type: "integer" }, sys_ms: { type: "integer" } } } },
      ] } });
    if (req.method === "tools/call") {
      io.err(Buffer.from(`standin-mcp: ${req.params?.name} called\n`));
      if (req.params?.name === "burn") {
        burn(pod, req.params.arguments?.user_ms, req.params.arguments?.sys_ms);
        return send({ id: req.id, result: { content: [{ type: "text", text: "burnt" }] } });
      }
      return send({ id: req.id, result: { content: [{ type: "text", text: `in pod ${pod.metadata.name}` }] } });
    }
    if (req.id !== undefined) send({ id: req.id, error: { code: -32601, message: `no method ${req.method}` } });
  };
  proc.stdin = (b) => {
    pending += b.toString();
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim()) answer(JSON.parse(line));
    }
  };
  proc.stdinEnd = () => end(0);
}

// cat FILE...: each that exists printed, a complaint for each that does not (exit 1 then).
function catFiles(pod, paths, io, cgroupLayout, done) {
  let code = 0;
  for (const path of paths) {
    const text = path.startsWith("/sys/fs/cgroup/") ? cgroupFile(pod, path, cgroupLayout) : podFs(pod).get(normal(path))?.data;
    if (text === undefined) { io.err(Buffer.from(`cat: ${path}: No such file or directory\n`)); code = 1; continue; }
    io.out(Buffer.from(text));
  }
  done(code);
}

function runTar(pod, args, proc, io, fail, done) {
  const fs = podFs(pod);
  // tar -cf - -C DIR -- NAME  |  tar -xkf - -C DIR
  const dir = normal(args[args.indexOf("-C") + 1]);
  if (args[0] === "-cf") {
    const name = args[args.indexOf("--") + 1];
    const entry = fs.get(normal(name, dir));
    if (!entry) return fail(2, `tar: ${name}: Cannot stat: No such file or directory`);
    if (entry.dir) { io.out(tarOf(name + "/", Buffer.alloc(0), "5")); return done(0); }  // (its entries left out: the backend reads the header only)
    io.out(tarOf(name, entry.data));
    return done(0);
  }
  if (args[0] === "-xkf") {
    const chunks = [];
    let extracted = false;
    // At the archive's end (two empty blocks), as GNU tar stops reading there: a v4 exec
    // cannot close its stdin.
    proc.stdin = (b) => {
      chunks.push(b);
      if (archiveComplete(Buffer.concat(chunks))) proc.stdinEnd();
    };
    proc.stdinEnd = () => {
      if (extracted) return;
      extracted = true;
      for (const file of untar(Buffer.concat(chunks))) {
        const path = normal(file.name, dir);
        if (!path.startsWith(dir + "/")) return fail(2, `tar: ${file.name}: Member name contains '..'`);
        if (!fs.get(parent(path))?.dir) return fail(2, `tar: ${file.name}: Cannot open: No such file or directory`);
        if (fs.has(path)) return fail(2, `tar: ${file.name}: Cannot open: File exists`);
        fs.set(path, { data: file.data });
      }
      done(0);
    };
    return;
  }
  fail(2, `tar: the stand-in does not know ${args.join(" ")}`);
}

function fileCommand(pod, cmd, args, fail, done) {
  const fs = podFs(pod);
  const paths = args.slice(args.indexOf("--") + 1).map((p) => normal(p));
  for (const p of paths) if (!writable(p)) return fail(1, `${cmd}: '${p}': Permission denied`);
  const children = (p) => [...fs.keys()].filter((k) => k.startsWith(p + "/"));
  if (cmd === "rm") {
    const [p] = paths;
    if (!fs.has(p)) return fail(1, `rm: cannot remove '${p}': No such file or directory`);
    if (children(p).length) return fail(1, `rm: cannot remove '${p}': Directory not empty`);
    fs.delete(p); return done(0);
  }
  if (cmd === "mkdir") {
    const parts = paths[0].split("/").slice(1);
    let at = "";
    for (const part of parts) {
      at += "/" + part;
      const e = fs.get(at);
      if (e && !e.dir) return fail(1, `mkdir: cannot create directory '${at}': Not a directory`);
      if (!e) fs.set(at, { dir: true });
    }
    return done(0);
  }
  const [from, to] = paths;  // mv -T -- FROM TO
  if (!fs.has(from)) return fail(1, `mv: cannot stat '${from}': No such file or directory`);
  if (!fs.get(parent(to))?.dir) return fail(1, `mv: cannot move '${from}' to '${to}': No such file or directory`);
  if (fs.get(to)?.dir && children(to).length) return fail(1, `mv: cannot move '${from}' to '${to}': Directory not empty`);
  for (const k of [from, ...children(from)]) { fs.set(to + k.slice(from.length), fs.get(k)); fs.delete(k); }
  return done(0);
}

export const EXEC_ROUTE = /^\/api\/v1\/namespaces\/([a-z0-9-]+)\/pods\/([a-z0-9.-]+)\/exec$/;

// The upgrade of GET .../pods/NAME/exec. `ctx`: {token, store, execs, faults (take(kind)), refuse(socket, code, reason, message)}.
export function handleExecUpgrade(req, socket, ctx) {
  const url = new URL(req.url, "https://standin");
  const m = EXEC_ROUTE.exec(url.pathname);
  const refuse = (code, reason, message) => {
    const body = JSON.stringify({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code });
    socket.end(`HTTP/1.1 ${code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  };
  if (req.headers.authorization !== `Bearer ${ctx.token}`) return refuse(401, "Unauthorized", "Unauthorized");
  if (!m) return refuse(404, "NotFound", `the server could not find the requested resource (${url.pathname})`);
  if (req.method !== "GET" && req.method !== "POST") return refuse(405, "MethodNotAllowed", "pods/exec takes GET or POST");
  const pod = ctx.store.pods.get(m[2]);
  if (!pod) return refuse(404, "NotFound", `pods "${m[2]}" not found`);
  if (url.searchParams.get("container") !== "tool") return refuse(400, "BadRequest", `container ${url.searchParams.get("container")} is not valid for pod ${m[2]}`);
  if (pod.status?.phase !== "Running") return refuse(400, "BadRequest", `pod ${m[2]} is not running: its phase is ${pod.status?.phase}`);
  const command = url.searchParams.getAll("command");
  if (!command.length) return refuse(400, "BadRequest", "you must specify at least 1 command");
  const tty = url.searchParams.get("tty") === "true";
  if (tty && url.searchParams.get("stderr") === "true") return refuse(400, "BadRequest", "stderr cannot be set with tty");
  // A fault {kind: "exec-v4-only"} makes the next exec's server one that knows v4 alone and
  // refuses an offer of v5 with 400 (as a server whose WebSocket layer predates v5 does when
  // no offered protocol is known); {kind: "exec-no-v5"} one that chooses v4 from the offer.
  const v4only = ctx.takeFault("exec-v4-only");
  const noV5 = v4only || ctx.takeFault("exec-no-v5");
  const known = noV5 ? ["v4.channel.k8s.io"] : ["v5.channel.k8s.io", "v4.channel.k8s.io"];
  const offered = (req.headers["sec-websocket-protocol"] || "").split(",").map((s) => s.trim()).filter(Boolean);
  if (v4only && offered.includes("v5.channel.k8s.io"))
    return refuse(400, "BadRequest", `unable to upgrade: requested protocol(s) are not supported: ${offered.join(", ")}`);
  const protocol = offered.find((p) => known.includes(p));
  if (!protocol) return refuse(400, "BadRequest", `unable to upgrade: requested protocol(s) are not supported: ${offered.join(", ")}`);
  if ((req.headers.upgrade || "").toLowerCase() !== "websocket") return refuse(400, "BadRequest", "not a WebSocket upgrade");
  const accept = createHash("sha1").update(req.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`);
  const record = { pod: m[2], command, protocol, tty, stdin: "", resizes: [], stdinClosed: false, exitCode: null };
  ctx.execs.push(record);
  let open = true;
  const sendMessage = (channel, data) => { if (open) socket.write(frame(2, Buffer.concat([Buffer.from([channel]), data]))); };
  // An empty message on each channel first, as the API server's stream does.
  for (const ch of tty ? [1, 3] : [1, 2, 3]) sendMessage(ch, Buffer.alloc(0));
  // The cgroup's files as this exec finds them: faults {kind: "cgroup-v1"} (a node on cgroup
  // v1), "cpu-stat-missing" (neither file) and "cpu-stat-garbage" (cpu.stat unparseable), each
  // taken by the next exec that reads /sys/fs/cgroup.
  const cgroupLayout = !readsCgroup(command) ? "v2" : ctx.takeFault("cgroup-v1") ? "v1"
    : ctx.takeFault("cpu-stat-missing") ? "missing" : ctx.takeFault("cpu-stat-garbage") ? "garbage" : "v2";
  const proc = spawn(pod, command, {
    out: (b) => sendMessage(1, b),
    err: (b) => sendMessage(tty ? 1 : 2, b),
    exit: (code) => {
      record.exitCode = code;
      const status = code === 0 ? { metadata: {}, status: "Success" }
        : { metadata: {}, status: "Failure", message: `command terminated with non-zero exit code: error executing command [${command.join(" ")}], exit code ${code}`,
            reason: "NonZeroExitCode", details: { causes: [{ reason: "ExitCode", message: String(code) }] } };
      sendMessage(3, Buffer.from(JSON.stringify(status)));
      if (open) { open = false; socket.end(frame(8, Buffer.from([0x03, 0xe8]))); }
    },
  }, cgroupLayout);
  const read = frameReader((msg) => {
    if (!msg.length) return;
    const channel = msg[0], data = msg.subarray(1);
    if (channel === 0) { record.stdin += data.toString(); proc.stdin(data); }
    else if (channel === 4) { const size = JSON.parse(data.toString()); record.resizes.push(size); proc.resize(size.Width, size.Height); }
    else if (channel === 255 && protocol === "v5.channel.k8s.io" && data[0] === 0) { record.stdinClosed = true; proc.stdinEnd(); }
  }, () => { if (open) { open = false; socket.end(frame(8, Buffer.alloc(0))); } }, (p) => { if (open) socket.write(frame(10, p)); });
  socket.on("data", read);
  socket.on("error", () => { open = false; });
  socket.on("close", () => { open = false; });
}

// A pod deleted or gone: its processes end with it.
export function killPod(pod) {
  for (const proc of pod.procs?.values() || []) proc.signal(9);
}
