// Shared helpers of the A2A conformance scripts: the environment, checks
// that report and count failures, and the JSON-RPC error code of an SDK
// error (each SDK major wraps it differently).
import { randomUUID } from 'node:crypto';

export function env(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is required`);
    process.exit(2);
  }
  return v;
}

let failures = 0;

export async function check(name, fn) {
  try {
    await fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e?.stack ?? e}`);
  }
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

// codeOf returns the JSON-RPC error code an SDK error carries, or undefined.
export function codeOf(e) {
  return e?.envelopeCode ?? e?.errorResponse?.error?.code ?? e?.cause?.envelopeCode ?? e?.cause?.errorResponse?.error?.code ?? e?.code;
}

// rejects expects promise to fail with the JSON-RPC error code.
export async function rejects(promise, code, what) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert(err, `${what}: succeeded, want error ${code}`);
  assert(codeOf(err) === code, `${what}: error code ${codeOf(err)} (${err?.message}), want ${code}`);
}

export function bearer(key) {
  return { serviceParameters: { Authorization: `Bearer ${key}` } };
}

export const newID = randomUUID;

export function done(label) {
  if (failures > 0) {
    console.log(`${label}: ${failures} check(s) failed`);
    process.exit(1);
  }
  console.log(`${label}: all checks passed`);
}
