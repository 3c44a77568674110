// The console's "Sign in with <issuer>" (identity.console) against a real OpenID provider:
// panva's oidc-provider, run here on loopback with the console as a confidential client
// (client_secret_post, PKCE required) and its development login form, which accepts any
// name. Debian's headless chromium signs in end to end through chromedriver; the attacks on
// the flow (a substituted nonce, a tampered state, a code injected into another browser's
// login, a callback from a browser that did not start the login, a replayed state) are run
// against the real daemon and the real provider.
// Environment: CONSOLE_URL, PROVIDER_PORT, CLIENT_SECRET, AGENT_KEY, SCREENSHOT_DIR.
import Provider from "oidc-provider";
import { Builder, By, until } from "selenium-webdriver";
import chrome from "selenium-webdriver/chrome.js";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const base = process.env.CONSOLE_URL;
const issuer = `http://127.0.0.1:${process.env.PROVIDER_PORT}`;
const WAIT = 15000;
const started = Date.now();

function log(...args) {
  console.log(`[console_oidc_test +${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);
}

function startProvider() {
  const provider = new Provider(issuer, {
    clients: [{
      client_id: "airlock-console",
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [`${base}/console/oidc/callback`],
      response_types: ["code"],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "client_secret_post",
    }],
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: ["console-oidc-test-only"] },
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  });
  return new Promise((resolve) => {
    const server = provider.listen(Number(process.env.PROVIDER_PORT), "127.0.0.1", () => resolve(server));
  });
}

async function shot(driver, name) {
  writeFileSync(join(process.env.SCREENSHOT_DIR, name), await driver.takeScreenshot(), "base64");
}

async function pageText(driver) {
  return driver.findElement(By.css("body")).getText();
}

// The provider's development login form: any name, any password.
async function loginAtProvider(driver, name) {
  const login = await driver.wait(until.elementLocated(By.css("input[name=login]")), WAIT);
  await login.sendKeys(name);
  await driver.findElement(By.css("input[name=password]")).sendKeys("any");
  await driver.findElement(By.css("button[type=submit]")).click();
}

// From the provider back to the console, logging in (as bob) and consenting when it asks.
async function followToCallback(driver) {
  const deadline = Date.now() + WAIT;
  while (Date.now() < deadline) {
    const url = await driver.getCurrentUrl();
    if (url.startsWith(`${base}/console/`)) return url;
    if (url.startsWith(issuer)) {
      if ((await driver.findElements(By.css("input[name=login]"))).length) {
        await loginAtProvider(driver, "bob");
        continue;
      }
      const submit = await driver.findElements(By.css("button[type=submit]"));
      if (submit.length) await submit[0].click().catch(() => {});
    }
    await driver.sleep(200);
  }
  throw new Error(`the provider did not send the browser back: ${await driver.getCurrentUrl()}`);
}

// The authorization URL of a login the console's page starts (POST /console/oidc/login),
// not followed: the attacks change it first.
async function startLoginInPage(driver) {
  return driver.executeAsyncScript(async (done) => {
    const r = await fetch("/console/oidc/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    done((await r.json()).authorization_url);
  });
}

async function invokeCritical() {
  const resp = await fetch(`${base}/v1/tools/danger/invoke`, {
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.AGENT_KEY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ arguments: { payee: "ACME" }, reason: "signed-in approval test" }),
  });
  const body = await resp.json();
  assert.equal(resp.status, 202, JSON.stringify(body));
  return body;
}

async function signInEndToEnd(driver) {
  await driver.get(`${base}/console/`);
  const button = await driver.wait(until.elementLocated(By.id("oidc-sign-in")), WAIT);
  await driver.wait(until.elementIsVisible(button), WAIT);
  assert.equal(await button.getText(), "Sign in with corp-oidc");
  await shot(driver, "oidc-sign-in.png");
  await button.click();
  await driver.wait(async () => (await driver.getCurrentUrl()).startsWith(issuer), WAIT, "the browser is at the provider");
  await shot(driver, "oidc-provider-login.png");
  await followToCallback(driver);
  await driver.wait(until.elementIsVisible(await driver.wait(until.elementLocated(By.id("sign-out")), WAIT)), WAIT);
  assert.match(await driver.findElement(By.id("whoami")).getText(), /signed in as user bob \(corp-oidc\)/);
  log("signed in through the provider as bob");
  const state = await driver.executeScript(() => ({
    storage: Object.keys(localStorage).length + Object.keys(sessionStorage).length,
    cookie: document.cookie,
  }));
  assert.equal(state.storage, 0, "no token in browser storage");
  assert.equal(state.cookie, "", "the session cookie is HttpOnly; the login cookie is gone");

  // The session decides like any user token's: bob approves a critical call.
  const pending = await invokeCritical();
  await driver.get(`${base}/console/#/approval/${pending.approval.id}`);
  await driver.wait(until.elementLocated(By.id("approve")), WAIT);
  await driver.findElement(By.id("reason")).sendKeys("approved after signing in with the provider");
  await driver.findElement(By.id("approve")).click();
  await driver.wait(until.elementLocated(By.id("invocation-decisions")), WAIT);
  await driver.wait(async () => (await driver.findElement(By.id("invocation-status")).getText().catch(() => "")) === "ok", 30000);
  assert.match(await driver.findElement(By.id("invocation-decisions")).getText(), /approve\s+bob \(corp-oidc\)/);
  await shot(driver, "oidc-signed-in.png");
  log("bob approved a critical call; the invocation names him");
  await driver.findElement(By.id("sign-out")).click();
  await driver.wait(until.elementIsVisible(await driver.findElement(By.id("credential"))), WAIT);
}

async function expectRefusedAndSignedOut(driver, words, what) {
  const text = await pageText(driver);
  assert.ok(text.includes(words), `${what}: the callback refused it with "${words}": ${text}`);
  const session = await fetch(`${base}/console/session`);
  assert.equal(session.status, 401);
  await driver.get(`${base}/console/`);
  const status = await driver.executeAsyncScript(async (done) => done((await fetch("/console/session")).status));
  assert.equal(status, 401, `${what}: no session was made`);
  log(what, "refused");
}

// The provider signs a token for another nonce than the one this login's page was given:
// a token substituted from another sign-in is refused.
async function substitutedNonce(driver) {
  await driver.get(`${base}/console/`);
  const url = new URL(await startLoginInPage(driver));
  url.searchParams.set("nonce", "a-nonce-of-another-sign-in");
  await driver.get(url.href);
  await followToCallback(driver);
  await expectRefusedAndSignedOut(driver, "nonce is not this sign-in's", "a substituted nonce");
}

// A tampered state is refused before the code is used; that unused code is then injected into
// a login another browser started: its PKCE verifier does not match, the provider refuses.
async function tamperedStateAndInjectedCode(driver) {
  await driver.get(`${base}/console/`);
  const url = new URL(await startLoginInPage(driver));
  url.searchParams.set("state", "0".repeat(64));
  await driver.get(url.href);
  const code = new URL(await followToCallback(driver)).searchParams.get("code");
  assert.ok(code, "the provider issued a code");
  await expectRefusedAndSignedOut(driver, "the state is not one of a sign-in this server started", "a tampered state");

  const victim = await startLoginOverHttp();
  const injected = await callback(victim.state, code, victim.cookie);
  assert.equal(injected.status, 401, injected.text);
  assert.match(injected.text, /token endpoint refused the code: invalid_grant/);
  log("a code injected into another login: refused by the provider (PKCE)");
}

// ---- over HTTP, as another browser would ---------------------------------------------

async function startLoginOverHttp() {
  const r = await fetch(`${base}/console/oidc/login`, {
    method: "POST",
    headers: { Origin: base, "Content-Type": "application/json" },
    body: "{}",
  });
  assert.equal(r.status, 200);
  const url = new URL((await r.json()).authorization_url);
  const cookie = r.headers.get("set-cookie").split(";")[0];
  assert.match(r.headers.get("set-cookie"), /^airlock_console_oidc=[0-9a-f]{64}; Path=\/console\/oidc; Max-Age=600; HttpOnly; SameSite=Lax$/);
  for (const [k, v] of [["response_type", "code"], ["client_id", "airlock-console"], ["scope", "openid"], ["code_challenge_method", "S256"],
                        ["redirect_uri", `${base}/console/oidc/callback`]])
    assert.equal(url.searchParams.get(k), v, k);
  assert.match(url.searchParams.get("code_challenge"), /^[A-Za-z0-9_-]{43}$/);
  assert.match(url.searchParams.get("nonce"), /^[0-9a-f]{64}$/);
  assert.ok(url.href.startsWith(`${issuer}/`), `the provider's authorization_endpoint from its discovery: ${url.href}`);
  return { state: url.searchParams.get("state"), cookie, url };
}

async function callback(state, code, cookie) {
  const r = await fetch(`${base}/console/oidc/callback?state=${encodeURIComponent(state)}&code=${encodeURIComponent(code)}`,
                        { headers: cookie ? { Cookie: cookie } : {}, redirect: "manual" });
  return { status: r.status, text: await r.text() };
}

async function httpAttacks() {
  const cross = await fetch(`${base}/console/oidc/login`, {
    method: "POST", headers: { Origin: "https://evil.example", "Content-Type": "application/json" }, body: "{}",
  });
  assert.equal(cross.status, 403, "a foreign page may not start a login");
  const login = await startLoginOverHttp();
  const otherBrowser = await callback(login.state, "any-code", "");
  assert.equal(otherBrowser.status, 400, otherBrowser.text);
  assert.match(otherBrowser.text, /started in another browser/);
  const wrongCookie = await callback(login.state, "any-code", `airlock_console_oidc=${"0".repeat(64)}`);
  assert.match(wrongCookie.text, /started in another browser/, "a guessed binding cookie is refused too");
  // Another browser's attempt does not end the login (it cannot spend someone's state); the
  // browser that started it can, once.
  const badCode = await callback(login.state, "not-a-code", login.cookie);
  assert.equal(badCode.status, 401, badCode.text);
  assert.match(badCode.text, /token endpoint refused the code: invalid_grant/);
  const replay = await callback(login.state, "not-a-code", login.cookie);
  assert.equal(replay.status, 400, replay.text);
  assert.match(replay.text, /not one of a sign-in this server started/, "a state is used once");
  log("a cross-site start, another browser's callback, a bad code and a replayed state: refused");
}

async function main() {
  const server = await startProvider();
  const options = new chrome.Options()
    .setChromeBinaryPath("/usr/bin/chromium")
    .addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1280,1200", "--no-first-run", "--disable-extensions");
  const service = new chrome.ServiceBuilder("/usr/bin/chromedriver");
  const driver = await new Builder().forBrowser("chrome").setChromeOptions(options).setChromeService(service).build();
  try {
    await httpAttacks();
    await signInEndToEnd(driver);
    await substitutedNonce(driver);
    await tamperedStateAndInjectedCode(driver);
    log("all passed");
  } catch (e) {
    log("failed at", await driver.getCurrentUrl().catch(() => "?"), "showing:", (await pageText(driver).catch(() => "?")).slice(0, 2000));
    throw e;
  } finally {
    await driver.quit();
    server.close();
  }
}

main().then(() => process.exit(0), (e) => {
  console.error("[console_oidc_test] FAILED:", e && e.stack ? e.stack : e);
  process.exit(1);
});
