// The web app's benchmarks (W1-W3): the browser tests' setup (Debian's Chromium, a `dynaforge demo` of its own)
// with bench/ as the test folder. Run by `make bench` through bench/w_web.py.
import { defineConfig } from "@playwright/test";
import base from "./playwright.config";

export default defineConfig({ ...base, testDir: "bench", testMatch: "*.bench.ts", timeout: 180_000 });
