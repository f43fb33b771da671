/** Per test file: the shared emulator's endpoint and this file's own table, key alias and settings. */
import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { EMULATOR_TIMEOUT_ENV, resetClients } from "#lib/aws/clients.ts";
import { resetConfig } from "#lib/config.ts";

const suffix = randomBytes(4).toString("hex");
Object.assign(process.env, {
  AWS_ENDPOINT_URL: inject("awsEndpoint"),
  AWS_ACCESS_KEY_ID: "test",
  AWS_SECRET_ACCESS_KEY: "test",
  AWS_REGION: "us-east-1",
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
  TABLE_NAME: `gw-test-${suffix}`,
  KMS_KEY_ALIAS: `alias/gw-test-${suffix}`,
  HOME_REGION: "us-east-1",
  REGIONS: "us-east-1,eu-west-1",
  EMAIL_SENDER: "no-reply@gateway.test",
  APP_URL: "http://app.gateway.test",
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
  // The emulator queues concurrent requests (lib/aws/clients.ts); the stall tests set their own.
  ...EMULATOR_TIMEOUT_ENV,
});
delete process.env.STRIPE_SECRET_KEY;
delete process.env.STRIPE_API_BASE;
resetConfig();
resetClients();
