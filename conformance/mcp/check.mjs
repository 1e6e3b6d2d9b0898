// The MCP TypeScript SDK's client against H4R, over one transport:
//
//   node check.mjs http URL ADMIN_KEY READ_KEY
//   node check.mjs stdio H4R_BINARY DATA_DIR
//
// It initialises, lists tools and resources, reads the resources it is
// shown, and calls every tool with good and bad arguments (cases.mjs).
// Over HTTP it also checks, with a read-only key, that h4r://policy is
// neither listed nor readable (a JSON-RPC error with a code the spec
// defines), and that using another key's session is refused as JSON.
// Exit status 1 on any failure, each printed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

import { resources, tools } from "./cases.mjs";

const [mode, ...args] = process.argv.slice(2);
const failures = [];
const fail = (msg) => {
  failures.push(msg);
  console.error(`FAIL [${mode}] ${msg}`);
};
const ok = (msg) => console.log(`ok   [${mode}] ${msg}`);

// A JSON-RPC error code the JSON-RPC 2.0 spec or MCP defines.
const definedCode = (c) => [-32700, -32600, -32601, -32602, -32603, -32002].includes(c) || (c <= -32000 && c >= -32099);

async function connect(transport) {
  const client = new Client({ name: "h4r-conformance", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

function httpTransport(url, key, sessionId) {
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    sessionId,
  });
}

function text(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

// Calls every tool with good and bad arguments.
async function callTools(client) {
  const state = {};
  for (const t of tools) {
    try {
      const res = await client.callTool({ name: t.name, arguments: t.good(state) });
      if (res.isError) {
        fail(`${t.name} with good arguments: isError ${text(res)}`);
      } else {
        const out = res.structuredContent ?? JSON.parse(text(res));
        t.keep?.(out, state);
        ok(`${t.name} good`);
      }
    } catch (e) {
      fail(`${t.name} with good arguments threw: ${e}`);
    }
    try {
      const res = await client.callTool({ name: t.name, arguments: t.bad });
      let body;
      try {
        body = JSON.parse(text(res));
      } catch {
        body = undefined;
      }
      const e = body?.error;
      if (!res.isError || !e || typeof e.code !== "string" || typeof e.message !== "string" || e.field !== t.field) {
        fail(`${t.name} with bad arguments ${JSON.stringify(t.bad)}: isError ${res.isError}, ${text(res)}; want the error shape naming ${t.field}`);
      } else {
        ok(`${t.name} bad -> ${e.code} naming ${e.field}`);
      }
    } catch (e) {
      fail(`${t.name} with bad arguments threw (a protocol error, not a tool error): ${e}`);
    }
  }
}

async function listAll(client, wantResources) {
  const info = client.getServerVersion();
  if (info?.name !== "h4r") fail(`initialize: serverInfo ${JSON.stringify(info)}, want name h4r`);
  else ok(`initialize: ${info.name} ${info.version}`);
  try {
    const { tools: listed } = await client.listTools();
    const names = listed.map((t) => t.name).sort();
    const missing = tools.map((t) => t.name).filter((n) => !names.includes(n));
    if (missing.length) fail(`tools/list lacks ${missing}; has ${names}`);
    else ok(`tools/list: ${names.join(", ")}`);
  } catch (e) {
    fail(`tools/list: ${e}`);
  }
  try {
    const { resources: listed } = await client.listResources();
    const uris = listed.map((r) => r.uri).sort();
    if (JSON.stringify(uris) !== JSON.stringify(wantResources)) fail(`resources/list ${uris}, want ${wantResources}`);
    else ok(`resources/list: ${uris.join(", ")}`);
    for (const uri of uris) {
      const res = await client.readResource({ uri });
      JSON.parse(res.contents[0].text);
      ok(`resources/read ${uri}`);
    }
  } catch (e) {
    fail(`resources: ${e}`);
  }
}

async function http(url, adminKey, readKey) {
  const admin = await connect(httpTransport(url, adminKey));
  await listAll(admin, resources);
  await callTools(admin);

  // A read-only key: h4r://policy is for admin keys.
  const reader = await connect(httpTransport(url, readKey));
  const { resources: listed } = await reader.listResources();
  if (listed.some((r) => r.uri === "h4r://policy")) fail("resources/list shows h4r://policy to a read-only key");
  else ok("resources/list hides h4r://policy from a read-only key");
  try {
    await reader.readResource({ uri: "h4r://policy" });
    fail("a read-only key read h4r://policy");
  } catch (e) {
    if (!(e instanceof McpError) || !definedCode(e.code)) fail(`reading h4r://policy without admin: ${e} (code ${e.code}), want a JSON-RPC error code`);
    else ok(`resources/read h4r://policy without admin -> JSON-RPC error ${e.code}`);
  }
  await reader.close();

  // The admin key's session used with the read key: refused, as JSON.
  const sessionId = admin.transport.sessionId;
  const r = await fetch(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${readKey}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "Mcp-Session-Id": sessionId,
      "Mcp-Protocol-Version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
  });
  const body = await r.text();
  let e;
  try {
    e = JSON.parse(body).error;
  } catch {
    e = undefined;
  }
  if (r.status !== 403 || !r.headers.get("content-type")?.startsWith("application/json") || e?.code !== "permission_denied") {
    fail(`another key's session: ${r.status} ${r.headers.get("content-type")} ${body}; want 403 and the JSON error shape`);
  } else ok(`another key's session -> 403 ${body.trim()}`);
  await admin.close();
}

async function stdio(bin, dataDir) {
  const env = { ...process.env, H4R_DATA_DIR: dataDir, H4R_LOG_LEVEL: "warn" };
  delete env.H4R_API_KEYS_FILE;
  delete env.H4R_MCP_API_KEY;
  const client = await connect(new StdioClientTransport({ command: bin, args: ["mcp", "--demo"], env, stderr: "inherit" }));
  // No H4R_MCP_API_KEY: the anonymous public specialist with read and
  // ingest tools, who may not read the policy.
  await listAll(client, ["h4r://stats"]);
  await callTools(client);
  await client.close();
}

try {
  if (mode === "http") await http(...args);
  else if (mode === "stdio") await stdio(...args);
  else throw new Error(`usage: check.mjs http URL ADMIN_KEY READ_KEY | stdio H4R_BINARY DATA_DIR`);
} catch (e) {
  fail(`${e?.stack ?? e}`);
}
process.exit(failures.length ? 1 : 0);
