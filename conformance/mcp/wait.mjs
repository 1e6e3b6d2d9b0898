// Waits until URL answers 200 (h4r serve's /health/live), at most 120 s.
const url = process.argv[2];
const deadline = Date.now() + 120_000;
for (;;) {
  try {
    if ((await fetch(url)).status === 200) process.exit(0);
  } catch {
    /* not listening yet */
  }
  if (Date.now() > deadline) {
    console.error(`${url} did not answer 200 within 120 s`);
    process.exit(1);
  }
  await new Promise((r) => setTimeout(r, 250));
}
