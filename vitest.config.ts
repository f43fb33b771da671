import { defineConfig } from "vitest/config";

/**
 * Two tiers (README "The two commands"): `unit` (test/unit) runs without the AWS emulator, every
 * AWS call refused at once and failing its file (test/setup/no-emulator.ts); `emulator` (every
 * other test) shares one emulator for the run (test/setup/global-setup.ts). `vitest run` runs
 * both; `vitest run --project unit` (npm run test:unit) the first.
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          // No global setup: no emulator. file-env.ts gets a closed port, then no-emulator.ts
          // points the SDK at its refusing endpoint.
          provide: { awsEndpoint: "http://127.0.0.1:9" },
          setupFiles: ["test/setup/file-env.ts", "test/setup/no-emulator.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "emulator",
          include: ["test/**/*.test.ts"],
          exclude: ["test/unit/**", "test/browser/**"],
          globalSetup: ["test/setup/global-setup.ts"],
          setupFiles: ["test/setup/file-env.ts"],
        },
      },
      {
        // The web console in one shared Chromium (test/setup/browser-setup.ts builds the console
        // first when stale), against the real local stack in the shared emulator.
        extends: true,
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          // A sign-in hashes a password: under load a page takes more than the default 1 s to change.
          expect: { poll: { timeout: 10_000 } },
          globalSetup: ["test/setup/global-setup.ts", "test/setup/browser-setup.ts"],
          setupFiles: ["test/setup/file-env.ts"],
        },
      },
    ],
  },
});
