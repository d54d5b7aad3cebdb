// Browser tests: Debian's Chromium (never a downloaded browser) against a real `dynaforge demo` on SQLite that
// e2e/global-setup.ts starts on a free port. Without Chromium or the server they skip with a message; with CI=true
// that is a failure.
import { defineConfig } from "@playwright/test";

export const CHROMIUM = process.env.DYNAFORGE_CHROMIUM ?? "/usr/bin/chromium";

export default defineConfig({
  testDir: "e2e",
  globalSetup: "./e2e/global-setup.ts",
  fullyParallel: false,
  workers: 1, // one demo server, two cores
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [["list"]],
  outputDir: "test-results",
  use: {
    browserName: "chromium",
    launchOptions: {
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-background-networking"],
    },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
  },
});
