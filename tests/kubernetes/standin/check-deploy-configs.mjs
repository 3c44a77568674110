// node check-deploy-configs.mjs AIRLOCK MANIFEST.yaml...
// The Airlock configuration inside each ConfigMap of the manifests (data["airlock.yaml"]) as
// the daemon would read it, which the schema check cannot see (a ConfigMap's data is just a
// string): every file it names is under a volume the daemon's container of the same directory
// mounts (and the config itself under the ConfigMap's), then `airlock serve --check` on it with
// those files made in a temporary directory (a password, Ed25519 keys 0600). Exits 1 naming
// each problem.
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
  return Object.fromEntries(Object.entries(paths).filter(([, p]) => p !== undefined));
}

// The container that runs `serve` in a Deployment of `dir` mounting ConfigMap `name`.
function daemonFor(dir, name) {
  for (const { file, object } of objects) {
    if (path.dirname(file) !== dir || object?.kind !== "Deployment") continue;
    const pod = object.spec.template.spec;
    const volume = (pod.volumes ?? []).find((v) => v.configMap?.name === name);
    const container = pod.containers.find((c) => (c.args ?? []).includes("serve"));
    if (volume && container) return { container, volume: volume.name };
  }
  return null;
}

const under = (file, dir) => file === dir || file.startsWith(dir.endsWith("/") ? dir : dir + "/");

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
  for (const [field, p] of Object.entries(configPaths(config))) {
    const file = field !== "storage.dataDir";  // a file inside a volume, not the volume itself
    if (!mounts.some((m) => under(p, m.mountPath) && !(file && p === m.mountPath)))
      problems.push(`${what}: ${field} ${p} is not inside a volume the daemon mounts`);
    const local = path.join(root, p);
    text = text.split(p).join(local);
    if (!file) continue;
    fs.mkdirSync(path.dirname(local), { recursive: true });
    const key = crypto.generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" });
    fs.writeFileSync(local, field.endsWith("passwordFile") ? "password\n" : key, { mode: 0o600 });
  }
  const configPath = path.join(root, "airlock.yaml");
  fs.writeFileSync(configPath, text);
  const run = spawnSync(airlock, ["serve", "--check", "--config", configPath], { encoding: "utf8" });
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
