// A client generated from H4R's /openapi.json (openapi-typescript types,
// openapi-fetch calls) makes one real call: a context pack. tsc checks
// that the request and the fields read here exist in the description;
// running it checks the server answers them. Usage: node client.js BASE_URL
import createClient from "openapi-fetch";
import type { paths } from "./build/h4r.js";

const baseUrl = process.argv[2];
if (!baseUrl) {
  console.error("usage: node client.js http://127.0.0.1:PORT");
  process.exit(2);
}
const client = createClient<paths>({ baseUrl });
const { data, error, response } = await client.POST("/v1/context-pack", {
  body: {
    specialist: { id: "playwright_healer", securityLevel: "internal", authorizedGroups: ["qa"] },
    query: { type: "hybrid", text: "login test failures with selector issues" },
    limit: 5,
  },
});
if (data === undefined) {
  console.error(`context pack: HTTP ${response.status}:`, JSON.stringify(error));
  process.exit(1);
}
const ids = data.results.map((r) => r.id);
if (data.status !== "ok" || ids.length === 0 || data.explainability.items === undefined) {
  console.error("context pack: unexpected answer:", JSON.stringify(data).slice(0, 500));
  process.exit(1);
}
console.log(`context pack: status ${data.status}, ${ids.length} results (${ids.join(", ")}), total_count ${data.total_count}`);
