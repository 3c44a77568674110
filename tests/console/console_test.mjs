// The web console in Debian's headless chromium, driven by selenium-webdriver through
// chromedriver (started by console_browser_test.cpp against a daemon it runs). Environment:
// CONSOLE_URL, AGENT_KEY, TOKEN_ALICE (requester), TOKEN_BOB (approver, reads all and the
// audit log), TOKEN_MALLORY (no approve), SCREENSHOT_DIR. Exits non-zero on the first failure.
import { Builder, By, until } from "selenium-webdriver";
import chrome from "selenium-webdriver/chrome.js";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const base = process.env.CONSOLE_URL;
const shots = process.env.SCREENSHOT_DIR;
const WAIT = 15000;
const started = Date.now();

function log(...args) {
  console.log(`[console_test +${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);
}

// Hostile values: markup, attribute breakout, a javascript: link, a bidi override.
const HOSTILE = {
  script: "<script>window.__pwned = 'script'</script>",
  attr: "\"><img src=x onerror=\"window.__pwned='img'\">",
  link: "javascript:window.__pwned='link'",
  bidi: "invoice_\u202Efdp.exe and \u2066isolate\u2069",
  amount: 100,
};

// Arguments whose integers a JavaScript number cannot hold, and one character of every
// invisible class, as the agent's raw JSON text (JSON.stringify would round the integers).
const BIG = ["12345678901234567891", "9007199254740993", "-9007199254740993"];
const INVISIBLES = {
  "zero-width space": 0x200b, "zero-width non-joiner": 0x200c, "zero-width joiner": 0x200d, "word joiner": 0x2060,
  "byte order mark": 0xfeff, "soft hyphen": 0x00ad, "combining grapheme joiner": 0x034f,
  "tag latin A": 0xe0041, "cancel tag": 0xe007f, "variation selector 16": 0xfe0f, "variation selector 17": 0xe0100,
  "line separator": 0x2028, "paragraph separator": 0x2029,
  "right-to-left override": 0x202e, "left-to-right isolate": 0x2066, "right-to-left mark": 0x200f, "arabic letter mark": 0x061c,
  "no-break space": 0x00a0, "ideographic space": 0x3000, "thin space": 0x2009,
  "hangul filler": 0x3164, "braille blank": 0x2800, "bell (C0 control)": 0x0007, "next line (C1 control)": 0x0085,
};
const label = (cp) => `\u27E8U+${cp.toString(16).toUpperCase().padStart(4, "0")}\u27E9`;
function exactBody() {
  const raw = (cp) => (cp < 0x20 ? `\\u${cp.toString(16).padStart(4, "0")}` : String.fromCodePoint(cp));  // JSON escapes C0
  const members = Object.entries(INVISIBLES).map(([name, cp], i) => `"k${i}": "${name}:${raw(cp)}:end"`);
  return `{"arguments": {"amount": ${BIG[0]}, "n": ${BIG[1]}, "neg": ${BIG[2]}, ${members.join(", ")}}}`;
}

// The agent's stated reason for the hostile call: markup, shown only as text.
const REASON = "Paying <img src=x onerror=\"window.__pwned='reason'\"> invoice 7";

async function invoke(args, rawBody, reason) {
  const resp = await fetch(`${base}/v1/tools/danger/invoke`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${process.env.AGENT_KEY}`,
      "Airlock-Subject-Token": process.env.TOKEN_ALICE,
      "Content-Type": "application/json",
    },
    body: rawBody ?? JSON.stringify(reason ? { arguments: args, reason } : { arguments: args }),
  });
  const body = await resp.json();
  assert.equal(resp.status, 202, JSON.stringify(body).slice(0, 500));
  return body;
}

async function shot(driver, name) {
  writeFileSync(join(shots, name), await driver.takeScreenshot(), "base64");
  log("screenshot", name);
}

async function signIn(driver, credential) {
  await driver.get(`${base}/console/`);
  const field = await driver.wait(until.elementLocated(By.id("credential")), WAIT);
  await driver.wait(until.elementIsVisible(field), WAIT);
  await field.sendKeys(credential);
  await driver.findElement(By.id("sign-in-button")).click();
  await driver.wait(until.elementIsVisible(await driver.findElement(By.id("sign-out"))), WAIT);
}

async function signOut(driver) {
  await driver.findElement(By.id("sign-out")).click();
  await driver.wait(until.elementIsVisible(await driver.findElement(By.id("credential"))), WAIT);
}

// Nothing hostile ran or was parsed as markup, and no bidi control reached a text node.
async function assertInert(driver, where) {
  const found = await driver.executeScript(() => ({
    pwned: window.__pwned ?? null,
    imgs: document.querySelectorAll("img").length,
    scripts: [...document.querySelectorAll("script")].map((s) => s.getAttribute("src")),
    jsLinks: [...document.querySelectorAll("a")].filter((a) => !a.getAttribute("href").startsWith("#/")).length,
    onAttrs: [...document.querySelectorAll("*")].filter((e) => [...e.attributes].some((a) => a.name.startsWith("on"))).length,
    rawBidi: /[\u202A-\u202E\u2066-\u2069]/.test(document.body.textContent),
  }));
  assert.equal(found.pwned, null, `${where}: hostile script ran`);
  assert.equal(found.imgs, 0, `${where}: an <img> from data was created`);
  assert.deepEqual(found.scripts, ["console.js"], `${where}: a <script> from data was created`);
  assert.equal(found.jsLinks, 0, `${where}: a link not inside the console`);
  assert.equal(found.onAttrs, 0, `${where}: an on* attribute`);
  assert.equal(found.rawBidi, false, `${where}: a raw bidi control reached the page`);
}

// The second layer: even markup that did reach the DOM (here put there on purpose) cannot run
// a script, an inline handler or load a foreign image, because of the Content-Security-Policy.
async function assertCspHolds(driver) {
  const found = await driver.executeAsyncScript((done) => {
    const violations = [];
    document.addEventListener("securitypolicyviolation", (e) => violations.push(e.violatedDirective));
    const s = document.createElement("script");
    s.textContent = "window.__inline = 1";
    document.body.appendChild(s);
    const box = document.createElement("div");
    box.innerHTML = '<img src="https://evil.example/x.png" onerror="window.__handler = 1">';
    document.body.appendChild(box);
    setTimeout(() => { box.remove(); s.remove(); done({ inline: window.__inline ?? null, handler: window.__handler ?? null, violations }); }, 500);
  });
  assert.equal(found.inline, null, "an inline script ran: the CSP does not hold");
  assert.equal(found.handler, null, "an inline handler ran: the CSP does not hold");
  assert.ok(found.violations.some((v) => v.startsWith("script-src")), `script-src violations: ${found.violations}`);
  assert.ok(found.violations.some((v) => v.startsWith("img-src")), `img-src violation: ${found.violations}`);
  log("the CSP blocked an inline script, an inline handler and a foreign image");
}

async function textOf(driver, id) {
  return driver.findElement(By.id(id)).getAttribute("textContent");
}

async function approverFlow(driver) {
  await signIn(driver, process.env.TOKEN_BOB);
  await driver.wait(until.elementLocated(By.id("no-approvals")), WAIT);
  log("bob signed in; the queue is empty");

  // Requests made after the page loaded appear without a reload (polling).
  const hostile = await invoke(HOSTILE, null, REASON);
  const big = await invoke({ blob: "A".repeat(1024 * 1024), note: HOSTILE.bidi });
  const row = By.css(`tr[data-approval="${hostile.approval.id}"]`);
  await driver.wait(until.elementLocated(row), WAIT);
  await driver.wait(until.elementLocated(By.css(`tr[data-approval="${big.approval.id}"]`)), WAIT);
  log("both approvals appeared without a reload");
  await assertInert(driver, "the queue");
  const rowText = await driver.findElement(row).getAttribute("textContent");
  assert.match(rowText, /alice/);
  assert.match(rowText, /agent/);
  assert.match(rowText, /critical/);
  assert.ok(rowText.includes("\u27E8U+202E\u27E9"), `the bidi override is shown escaped in the list: ${rowText}`);
  const bigRow = await driver.findElement(By.css(`tr[data-approval="${big.approval.id}"]`)).getAttribute("textContent");
  assert.ok(bigRow.length < 2000, `the 1 MB argument is truncated in the list (${bigRow.length} characters)`);
  assert.match(bigRow, /bytes\)/);
  assert.match(bigRow, /SHA-256 [0-9a-f]{64}/, "the full hash is in the list");
  await shot(driver, "approvals.png");

  // The big one: truncated with its hash, and "show all" shows all.
  await driver.get(`${base}/console/#/approval/${big.approval.id}`);
  await driver.wait(until.elementLocated(By.id("arguments-truncated")), WAIT);
  assert.ok((await textOf(driver, "arguments")).length <= 64 * 1024 + 200);
  await driver.findElement(By.id("show-all-arguments")).click();
  assert.ok((await textOf(driver, "arguments")).length > 1024 * 1024);
  await assertInert(driver, "the 1 MB approval");

  // The hostile one, in full: everything an approver needs, shown as text. Only the hash
  // changes, so the big one's page (with its own Approve button) stays until the new one is
  // drawn: waited for by the old button going away (a busy machine drew it late).
  const bigApprove = await driver.findElement(By.id("approve"));
  await driver.get(`${base}/console/#/approval/${hostile.approval.id}`);
  await driver.wait(until.stalenessOf(bigApprove), WAIT);
  await driver.wait(until.elementLocated(By.id("approve")), WAIT);
  const view = await textOf(driver, "view");
  // The arguments are shown as JSON: a quote inside a string is \" there.
  const asJson = (v) => JSON.stringify(v).slice(1, -1);
  for (const expected of [HOSTILE.script, asJson(HOSTILE.attr), HOSTILE.link, "payments.example.com", "PAYMENTS_TOKEN",
                          "payments:write", "alice", REASON, 'Pays an invoice. <img src=x onerror="window.__pwned=1">',
                          "In cents <script>window.__pwned=2</script>", "Who is paid", "invoice_\u27E8U+202E\u27E9fdp.exe", "\u27E8U+2066\u27E9isolate\u27E8U+2069\u27E9"])
    assert.ok(view.includes(expected), `the approval page shows ${expected}`);
  await assertInert(driver, "the approval page");
  assert.equal(await textOf(driver, "agent-reason"), REASON, "the agent's reason, as text");
  assert.match(await textOf(driver, "tool-fields"), /amount.*integer.*In cents/s, "the schema's field descriptions beside the arguments");
  await driver.findElement(By.id("reason")).sendKeys("checked the invoice with finance");
  await shot(driver, "approval.png");
  await driver.findElement(By.id("approve")).click();
  await driver.wait(until.elementTextContains(driver.findElement(By.id("decision-result")), "approved"), WAIT);
  log("approved");

  // The result: the console moves to the invocation, which runs and ends ok.
  await driver.wait(until.elementLocated(By.id("invocation-status")), WAIT);
  await driver.wait(async () => (await textOf(driver, "invocation-status").catch(() => "")) === "ok", 30000,
                    "the approved invocation ends ok");
  const output = await textOf(driver, "invocation-output");
  assert.ok(output.includes(HOSTILE.script) && output.includes(JSON.stringify(HOSTILE.attr).slice(1, -1)),
            "hostile output shown as text");
  assert.ok(output.includes("\u27E8U+202E\u27E9"), "bidi in the output shown escaped");
  // Who approved it, when and why, and the agent's reason, on the finished invocation.
  const decisions = await textOf(driver, "invocation-decisions");
  assert.match(decisions, /approve.*bob \(corp\).*checked the invoice with finance.*\d{4}-\d\d-\d\dT/s, decisions);
  assert.equal(await textOf(driver, "invocation-approval-status"), "approved");
  assert.equal(await textOf(driver, "invocation-agent-reason"), REASON);
  await assertInert(driver, "the invocation page");
  await shot(driver, "invocation.png");

  // History with filters: bob reads all; the approved one is there with its user and agent.
  await driver.get(`${base}/console/#/history?tool=danger&status=ok`);
  const histRow = By.css(`tr[data-invocation="${hostile.id}"]`);
  await driver.wait(until.elementLocated(histRow), WAIT);
  const hist = await driver.findElement(histRow).getAttribute("textContent");
  assert.match(hist, /alice/);
  assert.match(hist, /agent/);
  assert.equal((await driver.findElements(By.css(`tr[data-invocation="${big.id}"]`))).length, 0,
               "status=ok leaves out the pending one");
  await shot(driver, "history.png");

  // The audit log: the checkpoint, verify now, one record's inclusion proof.
  await driver.get(`${base}/console/#/audit`);
  await driver.wait(until.elementLocated(By.id("verify")), WAIT);
  await driver.findElement(By.id("verify")).click();
  await driver.wait(until.elementTextContains(driver.findElement(By.id("verify-result")), "intact:"), WAIT);
  await shot(driver, "audit.png");
  await driver.findElement(By.id("prove")).click();
  await driver.wait(until.elementLocated(By.id("proof")), WAIT);
  assert.match(await textOf(driver, "proof"), /"index": 0/);
  await signOut(driver);
  return { hostile, big };
}

// Issue #33: integers past 2^53 digit-exact, and every invisible class shown, with a warning,
// in the list, on the approval page and in the approved invocation's output.
async function exactFlow(driver) {
  await signIn(driver, process.env.TOKEN_BOB);
  const exact = await invoke(null, exactBody());
  const row = By.css(`tr[data-approval="${exact.approval.id}"]`);
  await driver.wait(until.elementLocated(row), WAIT);
  const rowText = await driver.findElement(row).getAttribute("textContent");
  // The list's preview is the first 256 bytes: "amount" comes first.
  assert.ok(rowText.includes(`"amount":${BIG[0]}`), `the list shows ${BIG[0]} digit-exact: ${rowText}`);
  await driver.get(`${base}/console/#/approval/${exact.approval.id}`);
  await driver.wait(until.elementLocated(By.id("approve")), WAIT);
  const args = await textOf(driver, "arguments");
  for (const digits of BIG) assert.ok(args.includes(digits), `the approval shows ${digits} digit-exact: ${args}`);
  assert.ok(!args.includes("12345678901234567000") && !args.includes("9007199254740992"), `no rounded integer: ${args}`);
  for (const [name, cp] of Object.entries(INVISIBLES)) {
    const shown = cp < 0x20 ? "\\u0007" : label(cp);  // JSON text escapes a C0 control itself
    assert.ok(args.includes(`${name}:${shown}:end`), `the ${name} (U+${cp.toString(16)}) is shown as ${shown}: ${args}`);
    if (cp >= 0x20) assert.ok(!args.includes(String.fromCodePoint(cp)), `no raw ${name} in the page`);
  }
  const marks = await driver.findElements(By.css("#arguments span.escaped"));
  assert.ok(marks.length >= Object.keys(INVISIBLES).length - 1, `each one is a distinct, styled mark (${marks.length})`);
  assert.match(await textOf(driver, "arguments-invisible"), /contains \d+ invisible or format characters/);
  assert.match(await textOf(driver, "arguments-hash-check"), /computed the same SHA-256/);
  await assertInert(driver, "the exact-arguments approval");
  await shot(driver, "approval-invisible.png");
  await driver.findElement(By.id("reason")).sendKeys("checked every digit");
  await driver.findElement(By.id("approve")).click();
  await driver.wait(until.elementLocated(By.id("invocation-status")), WAIT);
  await driver.wait(async () => (await textOf(driver, "invocation-status").catch(() => "")) === "ok", 30000,
                    "the approved invocation ends ok");
  const output = await textOf(driver, "invocation-output");
  for (const digits of BIG) assert.ok(output.includes(digits), `the output shows ${digits} digit-exact: ${output}`);
  assert.ok(output.includes(label(0x200b)) && output.includes(label(0xe0041)), `invisibles in the output shown: ${output}`);
  await driver.wait(until.elementLocated(By.id("invocation-output-invisible")), WAIT);
  log("big integers digit-exact and every invisible class shown, in the list, the approval and the output");
  await signOut(driver);
}

// What the page's own script could send: a decision with the session's CSRF token.
async function forgeDecision(driver, approvalId) {
  return driver.executeAsyncScript(async (id, done) => {
    const s = await (await fetch("/console/session")).json();
    const r = await fetch(`/console/api/approvals/${id}/approve`, {
      method: "POST", headers: { "Content-Type": "application/json", "X-Airlock-CSRF": s.csrf },
      body: JSON.stringify({ reason: "forged" }),
    });
    done({ status: r.status, body: await r.text() });
  }, approvalId);
}

async function noApproveFlow(driver, pending) {
  // mallory may not approve: an empty queue, no button on the approval, and the API refuses.
  await signIn(driver, process.env.TOKEN_MALLORY);
  await driver.wait(until.elementLocated(By.id("no-approvals")), WAIT);
  await driver.get(`${base}/console/#/approval/${pending.approval.id}`);
  await driver.wait(until.elementLocated(By.css("#view p.bad")), WAIT);
  assert.equal((await driver.findElements(By.id("approve"))).length, 0, "mallory sees no approve button");
  assert.equal((await driver.findElements(By.id("deny"))).length, 0, "mallory sees no deny button");
  await shot(driver, "no-approve.png");
  const forged = await forgeDecision(driver, pending.approval.id);
  assert.ok(forged.status === 403 || forged.status === 404, `the console's API refused mallory: ${JSON.stringify(forged)}`);
  const direct = await fetch(`${base}/v1/approvals/${pending.approval.id}/approve`, {
    method: "POST", headers: { Authorization: `Bearer ${process.env.TOKEN_MALLORY}`, "Content-Type": "application/json" },
    body: JSON.stringify({ reason: "forged" }),
  });
  assert.ok(direct.status === 403 || direct.status === 404, `the API refused mallory: ${direct.status}`);
  await signOut(driver);

  // alice asked for it: she sees it, with no button (separation of duties), and is refused.
  await signIn(driver, process.env.TOKEN_ALICE);
  await driver.get(`${base}/console/#/approval/${pending.approval.id}`);
  await driver.wait(until.elementLocated(By.id("no-decision")), WAIT);
  assert.equal((await driver.findElements(By.id("approve"))).length, 0, "alice sees no approve button");
  const own = await forgeDecision(driver, pending.approval.id);
  assert.equal(own.status, 403, `alice may not approve her own call: ${JSON.stringify(own)}`);
  await signOut(driver);
}

async function main() {
  const options = new chrome.Options()
    .setChromeBinaryPath("/usr/bin/chromium")
    .addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1280,1500", "--no-first-run", "--disable-extensions");
  const service = new chrome.ServiceBuilder("/usr/bin/chromedriver");
  const driver = await new Builder().forBrowser("chrome").setChromeOptions(options).setChromeService(service).build();
  try {
    await driver.get(`${base}/console/`);
    await driver.wait(until.elementLocated(By.id("credential")), WAIT);
    await driver.wait(until.elementIsVisible(driver.findElement(By.id("credential"))), WAIT);
    await shot(driver, "sign-in.png");
    await assertCspHolds(driver);
    const { big } = await approverFlow(driver);
    await exactFlow(driver);
    await noApproveFlow(driver, big);
    log("all passed");
  } finally {
    await driver.quit();
  }
}

main().catch((e) => {
  console.error("[console_test] FAILED:", e && e.stack ? e.stack : e);
  process.exit(1);
});
