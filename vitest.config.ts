import { defineConfig } from "vitest/config";

/**
 * Two tiers (README "Tests"): `unit` (test/unit) runs without the AWS emulator, every AWS call is
 * refused at once (test/setup/no-emulator.ts); `emulator` (every other test) shares one emulator
 * for the run (test/setup/global-setup.ts). `vitest run` runs both; `--project unit` the first.
 */
export default defineConfig({
  test: {
    setupFiles: ["test/setup/file-env.ts"],
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
          globalSetup: ["test/setup/no-emulator.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "emulator",
          include: ["test/**/*.test.ts"],
          exclude: ["test/unit/**"],
          globalSetup: ["test/setup/global-setup.ts"],
        },
      },
    ],
  },
});
