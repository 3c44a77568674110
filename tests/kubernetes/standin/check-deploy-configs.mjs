// node check-deploy-configs.mjs AIRLOCK MANIFEST.yaml...
// The Airlock configuration inside each ConfigMap of the manifests (data["airlock.yaml"]) as
// the daemon would read it, which the schema check cannot see (a ConfigMap's data is just a
// string): every file it names is under a volume the daemon's container of the same directory
// mounts (and the config itself under the ConfigMap's), a file under a ConfigMap's volume is a
// key of that ConfigMap (tool code), then `airlock serve --check` on it with those files made
// in a temporary directory (a password, Ed25519 keys 0600, a TLS certificate and its key made
// with the openssl command, the tool code from its ConfigMap). Exits 1 naming each problem.
import { spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse, parseAllDocuments } from "yaml";

const [airlock, ...files] = process.argv.slice(2);
const problems = [];
const objects = files.flatMap((file) =>
  parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => ({ file, object: d.toJSON() })));

// The files a config names, by where: what the daemon reads (or makes, dataDir) at start.
function configPaths(config) {
  const s = config.storage ?? {};
  const paths = { "storage.dataDir": s.dataDir, "storage.postgres.passwordFile": s.postgres?.passwordFile,
                  "storage.signingKeyFile": s.signingKeyFile, "storage.tokenKeyFile": s.tokenKeyFile };
  for (const [risk, tier] of Object.entries(config.tiers ?? {}))
    paths[`tiers.${risk}.kubernetes.kubeconfig`] = tier?.kubernetes?.kubeconfig;
  const tls = config.server?.tls ?? {};
  for (const field of ["certFile", "keyFile", "clientCAFile", "replicaCAFile"]) paths[`server.tls.${field}`] = tls[field];
  for (const tool of config.tools ?? []) paths[`tools[${tool.name}].runtime.file`] = tool.runtime?.file;
  return Object.fromEntries(Object.entries(paths).filter(([, p]) => p !== undefined));
}

// The container that runs `serve` in a Deployment of `dir` mounting ConfigMap `name`.
function daemonFor(dir, name) {
  for (const { file, object } of objects) {
    if (path.dirname(file) !== dir || object?.kind !== "Deployment") continue;
    const pod = object.spec.template.spec;
    const volume = (pod.volumes ?? []).find((v) => v.configMap?.name === name);
    const container = pod.containers.find((c) => (c.args ?? []).includes("serve"));
    if (volume && container) return { container, volume: volume.name, volumes: pod.volumes ?? [] };
  }
  return null;
}

const under = (file, dir) => file === dir || file.startsWith(dir.endsWith("/") ? dir : dir + "/");

// A certificate and its key (PEM), made once by the openssl command, for server.tls's files.
let tlsPair = null;
function tlsFiles() {
  if (tlsPair) return tlsPair;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "deploy-tls-"));
  const made = spawnSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
    "-nodes", "-days", "1", "-subj", "/CN=airlock.airlock.svc", "-keyout", `${dir}/key`, "-out", `${dir}/cert`],
    { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`openssl req failed: ${made.stderr}`);
  tlsPair = { cert: fs.readFileSync(`${dir}/cert`, "utf8"), key: fs.readFileSync(`${dir}/key`, "utf8") };
  fs.rmSync(dir, { recursive: true, force: true });
  return tlsPair;
}

// The ConfigMap behind volume `name` of a Deployment's pod, if it is one: the one of the same
// directory, else one of another (deploy/kubernetes-postgres/ uses deploy/kubernetes/'s).
function configMapOf(dir, volumes, name) {
  const cm = volumes.find((v) => v.name === name)?.configMap?.name;
  if (!cm) return null;
  const all = objects.filter(({ object }) => object?.kind === "ConfigMap" && object.metadata?.name === cm);
  return (all.find(({ file }) => path.dirname(file) === dir) ?? all[0])?.object ?? { metadata: { name: cm }, data: {} };
}

// What a file the config names holds in the check: made to fit what the daemon reads there.
function contentFor(field, p, mount, dir, volumes, what) {
  if (field.startsWith("server.tls.")) return field.endsWith("keyFile") ? tlsFiles().key : tlsFiles().cert;
  if (field.endsWith("passwordFile")) return "password\n";
  const configMap = mount && configMapOf(dir, volumes, mount.name);
  if (configMap) {
    const key = path.relative(mount.mountPath, p);
    if (configMap.data?.[key] === undefined)
      problems.push(`${what}: ${field} ${p}: the ConfigMap ${configMap.metadata.name} mounted at ${mount.mountPath} has no key ${key}`);
    return configMap.data?.[key] ?? "";
  }
  return crypto.generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" });
}

function check(file, configMap) {
  const what = `${file}: ConfigMap ${configMap.metadata.name}`;
  const config = parse(configMap.data["airlock.yaml"]);
  const daemon = daemonFor(path.dirname(file), configMap.metadata.name);
  if (!daemon) return problems.push(`${what}: no Deployment beside it runs serve with it mounted`);
  const mounts = daemon.container.volumeMounts ?? [];
  const args = daemon.container.args;
  const configFile = args[args.indexOf("--config") + 1];
  if (!mounts.some((m) => m.name === daemon.volume && configFile === path.join(m.mountPath, "airlock.yaml")))
    problems.push(`${what}: --config ${configFile} is not its airlock.yaml as mounted`);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "deploy-config-"));
  let text = configMap.data["airlock.yaml"];
  const dir = path.dirname(file);
  // Longest first, so that a path inside another one named too is rewritten whole.
  const named = Object.entries(configPaths(config)).sort(([, a], [, b]) => b.length - a.length);
  for (const [field, p] of named) {
    const file = field !== "storage.dataDir";  // a file inside a volume, not the volume itself
    const mount = mounts.filter((m) => under(p, m.mountPath) && !(file && p === m.mountPath))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    if (!mount) problems.push(`${what}: ${field} ${p} is not inside a volume the daemon mounts`);
    const local = path.join(root, p);
    text = text.split(p).join(local);
    if (!file) continue;
    fs.mkdirSync(path.dirname(local), { recursive: true });
    const content = contentFor(field, p, mount, dir, daemon.volumes, what);
    fs.writeFileSync(local, content, { mode: 0o600 });
  }
  const configPath = path.join(root, "airlock.yaml");
  fs.writeFileSync(configPath, text);
  // The container's other options too (--advertise-url), with each $(VAR) as Kubernetes
  // expands it from the container's env: here a sample value.
  const rest = args.slice(1).filter((_, i, all) => all[i] !== "--config" && all[i - 1] !== "--config")
    .map((a) => a.replace(/\$\((\w+)\)/g, (_, name) => (name.endsWith("_IP") ? "10.0.0.7" : `sample-${name}`)));
  const run = spawnSync(airlock, ["serve", "--check", "--config", configPath, ...rest], { encoding: "utf8" });
  const said = `${run.stdout ?? ""}${run.stderr ?? ""}`.trim() || String(run.error ?? "");
  if (run.status === 0) console.log(`${what}: ${said}`);
  else problems.push(`${what}: airlock serve --check refused it: ${said}`);
  fs.rmSync(root, { recursive: true, force: true });
}

let checked = 0;
for (const { file, object } of objects) {
  if (object?.kind !== "ConfigMap" || object.data?.["airlock.yaml"] === undefined) continue;
  checked++;
  check(file, object);
}
for (const p of problems) console.log(p);
console.log(`${checked} configs checked, ${problems.length} problems`);
if (checked === 0 || problems.length > 0) process.exit(1);
