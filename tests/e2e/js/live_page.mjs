// Drives the gateway's live page in headless Chromium (Debian's /usr/bin/chromium) with
// playwright-core: prints {"event":"ready"} once the page is subscribed, then waits until the
// top-10 table shows USER with SCORE, prints the tables as JSON and exits 0 (2 on time-out).
//   node live_page.mjs <page-url> <user> <score> [screenshot.png]
import { launch } from "./browser.mjs";

const [pageUrl, user, score, screenshot] = process.argv.slice(2);
const context = await launch();
let code = 0;
try {
  const page = context.pages()[0] || await context.newPage();
  page.on("console", (msg) => console.error(`page: ${msg.text()}`));
  await page.goto(pageUrl);
  await page.waitForSelector("#status.live", { timeout: 30_000 });
  console.log(JSON.stringify({ event: "ready" }));
  try {
    await page.waitForSelector(`#top tr[data-user="${user}"][data-score="${score}"]`, { timeout: 45_000 });
  } catch (err) {
    code = 2;
  }
  const rows = await page.$$eval("#top tr[data-user]", (trs) =>
    trs.map((tr) => ({ rank: Number(tr.dataset.rank), userId: tr.dataset.user, score: Number(tr.dataset.score) })));
  const around = await page.$$eval("#around tr[data-user]", (trs) => trs.map((tr) => tr.dataset.user));
  const friends = await page.$$eval("#friends tr[data-user]", (trs) =>
    trs.map((tr) => [tr.dataset.user, tr.dataset.rank]));
  const status = await page.textContent("#status");
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ event: "done", top: rows, around, friends, status }));
} finally {
  await context.close();
}
process.exit(code);
