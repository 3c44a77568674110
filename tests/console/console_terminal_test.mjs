// A session's terminal in the console, in Debian's headless chromium (selenium-webdriver through
// chromedriver; started by console_browser_test.cpp against a daemon it runs). Environment:
// CONSOLE_URL, TOKEN_ALICE (the session's owner, a user calling directly), TOKEN_BOB (another
// user), SESSION_ID, SCREENSHOT_DIR. Alice types into the terminal and sees the shell answer,
// ^C stops what runs in its foreground, and the shell's exit is shown; Bob, signed in, gets no
// terminal on Alice's session. Exits non-zero on the first failure.
import { Builder, By, Key, until } from "selenium-webdriver";
import chrome from "selenium-webdriver/chrome.js";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const base = process.env.CONSOLE_URL;
const session = process.env.SESSION_ID;
const WAIT = 15000;

async function signIn(driver, credential) {
  await driver.get(`${base}/console/`);
  const field = await driver.wait(until.elementLocated(By.id("credential")), WAIT);
  await driver.wait(until.elementIsVisible(field), WAIT);
  await field.sendKeys(credential);
  await driver.findElement(By.id("sign-in-button")).click();
  await driver.wait(until.elementIsVisible(await driver.findElement(By.id("sign-out"))), WAIT);
}

async function shown(driver) {
  return driver.executeScript(() => document.getElementById("terminal").textContent);
}

async function waitShown(driver, text) {
  await driver.wait(async () => (await shown(driver)).includes(text), WAIT, `the terminal never showed ${text}`);
}

async function run(driver) {
  await signIn(driver, process.env.TOKEN_ALICE);
  await driver.get(`${base}/console/#/sessions`);
  const row = await driver.wait(until.elementLocated(By.css(`tr[data-session="${session}"] a`)), WAIT);
  await row.click();
  await driver.wait(until.elementTextContains(driver.findElement(By.id("terminal-status")), "connected"), WAIT);
  const term = await driver.findElement(By.id("terminal"));
  await term.sendKeys("echo MARK-$((1+1))", Key.ENTER);
  await waitShown(driver, "MARK-2");
  await term.sendKeys("sleep 1000", Key.ENTER);
  await new Promise((r) => setTimeout(r, 500));
  await term.sendKeys(Key.chord(Key.CONTROL, "c"));
  await term.sendKeys("echo MARK-$((2+1)) $?", Key.ENTER);
  await waitShown(driver, "MARK-3 130");
  writeFileSync(join(process.env.SCREENSHOT_DIR, "terminal.png"), await driver.takeScreenshot(), "base64");
  await term.sendKeys("exit 6", Key.ENTER);
  await driver.wait(until.elementTextContains(driver.findElement(By.id("terminal-status")), "exit code 6"), WAIT);
  assert.equal(await driver.executeScript(() => document.querySelectorAll("#terminal *").length), 0,
               "the terminal's text became markup");

  await driver.findElement(By.id("sign-out")).click();
  await signIn(driver, process.env.TOKEN_BOB);
  await driver.get(`${base}/console/#/terminal/${encodeURIComponent(session)}`);
  await driver.wait(until.elementTextContains(driver.findElement(By.id("terminal-status")), "closed"), WAIT);
}

const options = new chrome.Options()
  .setChromeBinaryPath("/usr/bin/chromium")
  .addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1000", "--no-first-run", "--disable-extensions");
const service = new chrome.ServiceBuilder("/usr/bin/chromedriver");
const driver = await new Builder().forBrowser("chrome").setChromeOptions(options).setChromeService(service).build();
try {
  await run(driver);
  console.log("console terminal: ok");
} catch (e) {
  console.error("console terminal: FAILED:", e);
  try {
    writeFileSync(join(process.env.SCREENSHOT_DIR, "terminal-failure.png"), await driver.takeScreenshot(), "base64");
  } catch (ignored) {}
  process.exitCode = 1;
} finally {
  await driver.quit();
}
