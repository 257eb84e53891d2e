// Opens the gateway's GraphiQL page in headless Chromium with every request that leaves loopback
// refused (as with no network), runs QUERY from the editor and prints
// {"response", "offLoopback", "failed"}: the response pane's text, the URLs refused, and the
// requests that failed (exit 2 if no response shows within 30 s).
//   node graphiql_page.mjs <graphql-url> <query>
import { launch } from "./browser.mjs";

const [pageUrl, query] = process.argv.slice(2);
const context = await launch();
const offLoopback = [];
const failed = [];
await context.route("**/*", (route) => {
  const host = new URL(route.request().url()).hostname;
  if (host === "127.0.0.1" || host === "localhost") return route.continue();
  offLoopback.push(route.request().url());
  return route.abort("internetdisconnected");
});
let code = 0;
let response = "";
try {
  const page = context.pages()[0] || await context.newPage();
  page.on("console", (msg) => console.error(`page: ${msg.text()}`));
  page.on("requestfailed", (request) => failed.push(request.url()));
  await page.goto(pageUrl, { waitUntil: "load" });
  try {
    await page.waitForSelector(".graphiql-query-editor .CodeMirror", { timeout: 30_000 });
    await page.click(".graphiql-query-editor .CodeMirror");
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(query);
    await page.click(".graphiql-execute-button");
    await page.waitForFunction(
      () => (document.querySelector(".graphiql-response")?.textContent || "").includes("data"),
      null,
      { timeout: 30_000 },
    );
    response = await page.textContent(".graphiql-response");
  } catch (err) {
    console.error(String(err));
    code = 2;
  }
} finally {
  await context.close();
}
console.log(JSON.stringify({ response, offLoopback, failed }));
process.exit(code);
