/**
 * One AWS emulator for the whole run: moto_server on a free port, or AWS_ENDPOINT_URL when set.
 * Every test file then provisions its own uniquely named tables in it (test/setup/file-env.ts).
 */
import type { TestProject } from "vitest/node";
import { startEmulator } from "../../local/emulator.ts";

declare module "vitest" {
  export interface ProvidedContext {
    awsEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  process.env.AWS_ACCESS_KEY_ID ??= "test";
  process.env.AWS_SECRET_ACCESS_KEY ??= "test";
  const emulator = await startEmulator();
  project.provide("awsEndpoint", emulator.endpoint);
  return async () => {
    await emulator.stop();
  };
}
