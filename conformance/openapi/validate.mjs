// Validates an OpenAPI document with two independent validators, each
// against the official OpenAPI schema of the version the document
// declares (3.0 or 3.1): @seriousme/openapi-schema-validator (Ajv, the
// 3.1 dialect with JSON Schema 2020-12) and @apidevtools/swagger-parser
// (which also resolves every $ref). Usage: node validate.mjs FILE
import { readFile } from "node:fs/promises";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Validator } from "@seriousme/openapi-schema-validator";

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate.mjs openapi.json");
  process.exit(2);
}
const doc = JSON.parse(await readFile(file, "utf8"));
let failed = false;

const v = new Validator();
const res = await v.validate(structuredClone(doc));
if (res.valid) {
  console.log(`openapi-schema-validator: valid OpenAPI ${v.version}`);
} else {
  failed = true;
  console.error(`openapi-schema-validator: invalid against OpenAPI ${v.version}:`);
  console.error(JSON.stringify(res.errors, null, 2));
}

try {
  await SwaggerParser.validate(structuredClone(doc));
  console.log(`swagger-parser: valid OpenAPI ${doc.openapi}`);
} catch (err) {
  failed = true;
  console.error(`swagger-parser: ${err.message}`);
}
process.exit(failed ? 1 : 0);
