// Starts `dynaforge demo` (SQLite in a temporary folder, the built app from web/dist) on a free loopback port,
// waits until its target models are loaded, and hands its URL and the demo token to the tests through the
// environment. Returns the teardown that stops it.
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CHROMIUM } from "../playwright.config";

const WEB = resolve(import.meta.dirname, "..");
const DYNAFORGE = process.env.DYNAFORGE_BIN ?? resolve(WEB, "../.venv/bin/dynaforge");

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? ok(address.port) : fail(new Error("no port"))));
    });
  });
}

async function healthy(base: string, tasks: number): Promise<boolean> {
  try {
    const response = await fetch(`${base}/healthz`);
    if (!response.ok) return false;
    const health = (await response.json()) as { tasks: number; inference?: { models_loaded?: number } };
    return health.tasks >= tasks && (health.inference?.models_loaded ?? 0) >= health.tasks;
  } catch {
    return false;
  }
}

export default async function globalSetup() {
  const missing = [
    !existsSync(CHROMIUM) && `Chromium at ${CHROMIUM} (apt-get install chromium, or set DYNAFORGE_CHROMIUM)`,
    !existsSync(DYNAFORGE) && `the server at ${DYNAFORGE} (make setup)`,
    !existsSync(join(WEB, "dist", "index.html")) && "the built app (npm run build)",
  ].filter(Boolean);
  if (missing.length) {
    const message = `browser tests skipped: missing ${missing.join("; ")}`;
    if (process.env.CI === "true") throw new Error(`${message} (CI=true: a missing browser is a failure)`);
    console.warn(message);
    process.env.DYNAFORGE_E2E_SKIP = message;
    return;
  }
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), "dynaforge-e2e-"));
  const log = createWriteStream(join(dir, "demo.log"));
  const child: ChildProcess = spawn(DYNAFORGE, ["demo", "--host", "127.0.0.1", "--port", String(port)], {
    cwd: dir,
    env: {
      ...process.env,
      HF_HUB_OFFLINE: "1",
      DYNAFORGE_WEB_DIR: join(WEB, "dist"),
      // no registration limit: the browser tests sign some 25 people up from loopback (the default is 20 an hour)
      DYNAFORGE_REGISTRATIONS_PER_HOUR_PER_CLIENT: "0",
      // webhooks may go to a receiver the owner test runs on loopback (public addresses only, by default)
      DYNAFORGE_OUTBOUND_ALLOW: "127.0.0.1",
      // the local engine's model shares two cores with the browser and the demo's evaluations: a unit test is not a
      // benchmark (G1, G2 time it), so an example waits up to a minute for its answer rather than going pending
      DYNAFORGE_INFERENCE_TIMEOUT_S: "60",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    log.write(chunk);
  });
  child.stderr?.pipe(log);
  const deadline = Date.now() + 180_000;
  while (!(await healthy(base, 4))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`dynaforge demo did not become healthy (log: ${join(dir, "demo.log")}):\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const token = /token:\s+(\S+)/.exec(output)?.[1];
  if (!token) throw new Error(`no demo token in the demo's output:\n${output}`);
  process.env.DYNAFORGE_E2E_URL = base;
  process.env.DYNAFORGE_E2E_TOKEN = token;
  // The demo admin's password (printed when the demo creates the account): signing in with it makes a token of
  // its own, so a test that signs out (revoking its token) leaves the others signed in.
  process.env.DYNAFORGE_E2E_PASSWORD = /\(password (\S+)\)/.exec(output)?.[1] ?? "";
  return async () => {
    child.kill("SIGTERM");
    await Promise.race([
      new Promise((r) => child.once("exit", r)),
      new Promise((r) => setTimeout(r, 10_000)).then(() => child.kill("SIGKILL")),
    ]);
    log.end();
    if (process.env.DYNAFORGE_E2E_KEEP !== "1") rmSync(dir, { recursive: true, force: true });
  };
}
