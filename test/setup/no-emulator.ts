/**
 * The unit tier's guard (after file-env.ts, in each test file's process): there is no AWS
 * emulator. In its place a loopback endpoint that refuses every AWS call at once with an error
 * saying why, so a unit test that starts to need DynamoDB, KMS or SES fails clearly and fast
 * instead of waiting for a store: it belongs in test/integration (or test/e2e), which run with the
 * emulator (test/setup/global-setup.ts). A call whose error a test or the code swallowed still
 * fails the file: its last hook counts them.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll } from "vitest";
import { resetClients } from "#lib/aws/clients.ts";
import { resetConfig } from "#lib/config.ts";

export const NO_EMULATOR_MESSAGE =
  "test/unit runs without the AWS emulator: a test that calls DynamoDB, KMS or SES belongs in test/integration";

const calls: string[] = [];
const server = createServer((req, res) => {
  calls.push(String(req.headers["x-amz-target"] ?? `${req.method} ${req.url}`));
  req.resume();
  // The AWS JSON protocols read the error's name from __type (and the header), its text from message.
  res.writeHead(400, {
    "content-type": "application/x-amz-json-1.0",
    "x-amzn-errortype": "UnitTierHasNoEmulator",
  });
  res.end(JSON.stringify({ __type: "UnitTierHasNoEmulator", message: NO_EMULATOR_MESSAGE }));
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
process.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
process.env.SDK_MAX_ATTEMPTS = "1";
resetConfig();
resetClients();

// Registered first, so it runs after the file's own afterAll hooks.
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  if (calls.length > 0)
    throw new Error(`${NO_EMULATOR_MESSAGE}; AWS calls made: ${[...new Set(calls)].join(", ")}`);
});
