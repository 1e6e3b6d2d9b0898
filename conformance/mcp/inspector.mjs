// The MCP Inspector's CLI against H4R: tools/list and one tools/call of
// context_pack, over streamable HTTP and over stdio.
//
//   node inspector.mjs URL ADMIN_KEY H4R_BINARY DATA_DIR
//
// tools/list runs with --strict, which fails (exit 6) on a tool schema
// the Inspector finds not portable across hosts. Exit status 1 on any
// failure, each printed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

const [url, adminKey, bin, dataDir] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const launcher = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")), "clients/launcher/build/index.js");
// The Inspector keeps a catalog, client settings and storage under
// ~/.mcp-inspector: a home of this run's own, removed at the end.
const home = mkdtempSync(join(tmpdir(), "h4r-inspector-"));
process.on("exit", () => rmSync(home, { recursive: true, force: true }));
const env = {
  ...process.env,
  HOME: home,
  MCP_CATALOG_PATH: join(home, "mcp.json"),
  MCP_CLIENT_CONFIG_PATH: join(home, "client.json"),
  H4R_DATA_DIR: dataDir,
  H4R_LOG_LEVEL: "warn",
};
delete env.H4R_API_KEYS_FILE;
delete env.H4R_MCP_API_KEY;

const targets = {
  http: [url, "--transport", "http", "--header", `Authorization: Bearer ${adminKey}`],
  stdio: ["-e", `H4R_DATA_DIR=${dataDir}`, "-e", "H4R_LOG_LEVEL=warn", "--", bin, "mcp", "--demo"],
};
// The stdio target's own arguments come last, after --.
const run = (target, method) => {
  const t = targets[target];
  const cut = t.indexOf("--");
  const args = cut < 0 ? [...t, ...method] : [...t.slice(0, cut), ...method, ...t.slice(cut)];
  return spawnSync(process.execPath, [launcher, "--cli", "--format", "json", ...args], { env, encoding: "utf8", timeout: 120_000 });
};

// --format json prints {"result": …}.
const result = (stdout) => JSON.parse(stdout).result;
const clip = (s) => (s.length > 4000 ? `${s.slice(0, 4000)}…` : s);

let failed = 0;
for (const target of ["http", "stdio"]) {
  const list = run(target, ["--method", "tools/list", "--strict"]);
  let names = [];
  try {
    names = result(list.stdout).tools.map((t) => t.name);
  } catch {
    /* reported below */
  }
  if (list.status !== 0 || !names.includes("context_pack")) {
    failed++;
    console.error(`FAIL [inspector ${target}] tools/list: exit ${list.status}\n${clip(list.stdout)}\n${clip(list.stderr)}`);
  } else {
    // Warnings (a nullable field's ["null", "array"] type) do not fail.
    const warnings = (list.stderr.match(/^Warning: /gm) ?? []).length;
    console.log(`ok   [inspector ${target}] tools/list --strict: ${names.length} tools, no error (${warnings} portability warnings)`);
  }

  const call = run(target, ["--method", "tools/call", "--tool-name", "context_pack", "--tool-args-json", JSON.stringify({ query: { text: "login selector" } })]);
  let res;
  try {
    res = result(call.stdout);
  } catch {
    res = undefined;
  }
  if (call.status !== 0 || !res || res.isError || !Array.isArray(res.structuredContent?.results)) {
    failed++;
    console.error(`FAIL [inspector ${target}] tools/call context_pack: exit ${call.status}\n${clip(call.stdout)}\n${clip(call.stderr)}`);
  } else console.log(`ok   [inspector ${target}] tools/call context_pack: ${res.structuredContent.results.length} results`);
}
process.exit(failed ? 1 : 0);
