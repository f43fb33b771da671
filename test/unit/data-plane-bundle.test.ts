/**
 * The data-plane bundle as Lambda gets it (cdk/bundle.ts): what a cold start loads stays within
 * issue 9's 300 KiB, the modules loaded on demand stay out of it, and the bundle imports in a fresh
 * Node process (handler exported) with only environment credentials.
 */
import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUNDLE_LIMIT_BYTES, type BundleFigures, buildDataPlaneBundle } from "../../bench/bundle-report.ts";

let figures: BundleFigures;
beforeAll(async () => {
  figures = await buildDataPlaneBundle();
});
afterAll(() => {
  if (figures) rmSync(figures.outdir, { recursive: true, force: true });
});

describe("data-plane bundle", () => {
  it(`loads at most ${BUNDLE_LIMIT_BYTES / 1024} KiB at a cold start`, () => {
    expect(figures.startupBytes).toBeGreaterThan(50 * 1024); // the measurement measures something
    expect(figures.startupBytes).toBeLessThanOrEqual(BUNDLE_LIMIT_BYTES);
  });

  it("keeps jose, re2js, the KMS client and the SDK's default credential chain out of the cold start", () => {
    const atStart = figures.startupModules.map(([name]) => name);
    expect(atStart).toContain("@aws-sdk/client-dynamodb");
    for (const lazy of ["jose", "re2js", "@aws-sdk/client-kms"]) {
      expect(atStart).not.toContain(lazy);
      expect(figures.lazyModules.map(([name]) => name)).toContain(lazy);
    }
    for (const name of [...atStart, ...figures.lazyModules.map(([module]) => module)]) {
      expect(name).not.toMatch(/credential-provider-(node|ini|sso|process|web-identity)|nested-clients/);
    }
  });

  it("imports in a fresh Node process with environment credentials only", () => {
    expect(existsSync(join(figures.outdir, "index.mjs"))).toBe(true);
    const out = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const m = await import(${JSON.stringify(pathToFileURL(figures.entryFile).href)}); process.stdout.write(typeof m.handler);`,
      ],
      {
        encoding: "utf8",
        env: {
          PATH: process.env.PATH,
          AWS_REGION: "us-east-1",
          AWS_ACCESS_KEY_ID: "a",
          AWS_SECRET_ACCESS_KEY: "b",
        },
      },
    );
    expect(out).toBe("function");
  });
});
