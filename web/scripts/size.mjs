// After `vite build`: writes a gzip copy beside every compressible file of dist/assets (the server sends it to
// browsers that accept gzip) and prints W1, the JavaScript + CSS that the first load of an annotate page
// transfers: the app's entry with its static imports, plus the annotate screen's chunk with its own.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const dist = new URL("../dist/", import.meta.url);
const manifest = JSON.parse(readFileSync(new URL(".vite/manifest.json", dist), "utf8"));
const gzipped = new Map();

for (const name of readdirSync(new URL("assets/", dist))) {
  if (!/\.(js|css|svg|json|map|ttf|woff2?)$/.test(name) || name.endsWith(".gz")) continue;
  const body = readFileSync(new URL(`assets/${name}`, dist));
  const gz = gzipSync(body, { level: 9 });
  gzipped.set(`assets/${name}`, gz.length);
  if (gz.length < body.length && !/\.woff2?$/.test(name)) writeFileSync(new URL(`assets/${name}.gz`, dist), gz);
}

function closure(key, files = new Set()) {
  const chunk = manifest[key];
  if (!chunk || files.has(chunk.file)) return files;
  files.add(chunk.file);
  for (const css of chunk.css ?? []) files.add(css);
  for (const imported of chunk.imports ?? []) closure(imported, files);
  return files;
}

const files = closure("index.html");
closure("src/screens/Annotate.tsx", files);
const total = [...files].reduce((sum, file) => sum + (gzipped.get(file) ?? 0), 0);
const kb = total / 1024;
const target = 150;
console.log(
  `W1 annotate page first load: ${kb.toFixed(1)} KB gzip of JS+CSS in ${files.size} files; target <= ${target} KB ${kb <= target ? "PASS" : "FAIL"}`,
);
