// Headless Chromium (Debian's /usr/bin/chromium, or $CHROMIUM) with a fresh profile, for the page tests.
import { chromium } from "playwright-core";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function launch() {
  return chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "lb-chromium-")), {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
}
