// Opens the gateway's live page in headless Chromium and prints {"state", "status", "title"} once
// the status line reaches the given data-state (exit 2 if it does not within 30 s).
//   node live_status.mjs <page-url> <state>
import { launch } from "./browser.mjs";

const [pageUrl, wanted] = process.argv.slice(2);
const context = await launch();
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
