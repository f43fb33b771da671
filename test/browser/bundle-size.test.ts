/**
 * The console's initial JavaScript (the scripts index.html loads and the chunks they preload) stays
 * within its budget, gzipped (issue 22: 150 KiB). The browser project's setup builds the console.
 */
import { expect, it } from "vitest";
import { INITIAL_JS_BUDGET_BYTES, initialJsSize, sizeLine } from "../../local/console-build.ts";

it("the console's initial JavaScript is at most 150 KiB gzipped", async () => {
  const size = await initialJsSize();
  process.stdout.write(`${sizeLine(size)}\n`);
  expect(size.files.length).toBeGreaterThan(0);
  expect(size.gzipBytes).toBeGreaterThan(10_000);
  expect(size.gzipBytes).toBeLessThanOrEqual(INITIAL_JS_BUDGET_BYTES);
});
