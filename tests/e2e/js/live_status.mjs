// Opens the gateway's live page in headless Chromium and prints {"state", "status", "title"} once
// the status line reaches the given data-state (exit 2 if it does not within 30 s).
//   node live_status.mjs <page-url> <state>
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [pageUrl, wanted] = process.argv.slice(2);
const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "lb-chromium-")), {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"],
});
let code = 0;
try {
  const page = context.pages()[0] || await context.newPage();
  await page.goto(pageUrl);
  try {
    await page.waitForSelector(`#status[data-state="${wanted}"]`, { timeout: 30_000 });
  } catch (err) {
    code = 2;
  }
  const state = await page.getAttribute("#status", "data-state");
  const status = await page.textContent("#status");
  const title = await page.textContent("#title");
  console.log(JSON.stringify({ state, status, title }));
} finally {
  await context.close();
}
process.exit(code);
