/**
 * The admin CLI (cli/admin.ts) as operators run it: a real child process against this file's tables
 * in the emulator (the environment comes from test/setup/file-env.ts), asserting stdout JSON, the
 * one-line errors and the stored state. Tests are independent, so they run concurrently: each tsx
 * start costs about a second of CPU.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient, ScanCommand } from "@aws-sdk/client-dynamodb";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { marshallItem } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { createClient } from "#lib/domain/clients.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { issueToken, resolveToken } from "#lib/domain/tokens.ts";
import { createUser } from "#lib/domain/users.ts";
import { provisionStack } from "#local/provision.ts";
import { buildProgram, TOKEN_WARNING } from "../../cli/program.ts";
import { sentEmails } from "../support/emulator.ts";
import { storedItem } from "../support/stack.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function admin(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CliResult> {
  return new Promise((resolvePromise) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "cli/admin.ts", ...args],
      { cwd: root, env, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolvePromise({ code, stdout, stderr });
      },
    );
  });
}

/** Success: exit 0 and JSON on stdout. */
async function adminJson(args: string[], env?: NodeJS.ProcessEnv): Promise<any> {
  const result = await admin(args, env);
  expect(result, `admin ${args.join(" ")}`).toMatchObject({ code: 0 });
  return JSON.parse(result.stdout);
}

/** An expected failure: exit 1, nothing on stdout, exactly one `error:` line on stderr, no stack. */
function expectOneLineError(result: CliResult, message: RegExp): void {
  expect(result.code).toBe(1);
  expect(result.stdout).toBe("");
  const lines = result.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(lines[0]).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

let counter = 0;
const uniqueEmail = (label: string) => `${label}-${Date.now()}-${++counter}@admin-cli.test`;

async function newUser(label = "user"): Promise<string> {
  const user = await createUser({ email: uniqueEmail(label), firstName: "Test", lastName: label });
  return String(user.userId);
}

let tempDir: string;

beforeAll(async () => {
  await provisionStack(getConfig());
  tempDir = await mkdtemp(join(tmpdir(), "admin-cli-"));
});

afterAll(async () => {
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
});

// Concurrent tsx starts on a 2-core CI machine: a test of three sequential CLI runs can take
// well over the default 30 s when the whole suite runs beside it.
describe.concurrent("admin CLI", { timeout: 120_000 }, () => {
  it("users create prints the API user and stores it; a duplicate e-mail fails in one line", async () => {
    const email = uniqueEmail("ada");
    const args = ["users", "create", "--email", email.toUpperCase(), "--first-name", "Ada"];
    const user = await adminJson([...args, "--last-name", "Lovelace", "--phone", "+44 20 7946 0000"]);
    expect(user).toMatchObject({
      userId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      pKey: "USER",
      userEmail: email,
      userUsername: email,
      userFirstName: "Ada",
      userLastName: "Lovelace",
      userPhone: "+44 20 7946 0000",
      userTokens: [],
      userMsps: [],
      systemAdmin: false,
    });
    expect(await storedItem(keys.user(user.userId))).toMatchObject({ userEmail: email, entity: "user" });
    expect(await storedItem(keys.userEmail(email))).toMatchObject({ userId: user.userId });

    const duplicate = await admin([...args, "--last-name", "Again"]);
    expectOneLineError(duplicate, /A user with this email already exists/);
  });

  it("users get finds a user by id and by e-mail; an unknown user fails in one line", async () => {
    const email = uniqueEmail("grace");
    const userId = String((await createUser({ email, firstName: "Grace", lastName: "Hopper" })).userId);
    const [byId, byEmail, unknown, invalid] = await Promise.all([
      adminJson(["users", "get", userId]),
      adminJson(["users", "get", email]),
      admin(["users", "get", "nobody@admin-cli.test"]),
      admin(["users", "create", "--email", "not-an-email", "--first-name", "A", "--last-name", "B"]),
    ]);
    expect(byId).toMatchObject({ userId, userEmail: email, userFirstName: "Grace" });
    expect(byEmail).toEqual(byId);
    expectOneLineError(unknown, /User not found/);
    expectOneLineError(invalid, /invalid input: email/);
  });

  it("tokens issue prints the raw token once; list shows it masked; revoke disables it", async () => {
    const userId = await newUser("tokens");
    const issued = await admin(["tokens", "issue", userId, "--name", "deploy script"]);
    expect(issued.code).toBe(0);
    expect(issued.stderr).toMatch(/^warning: store this token now/);
    const body = JSON.parse(issued.stdout);
    expect(body).toMatchObject({
      userId,
      tokenId: expect.stringMatching(/^tok_/),
      tokenName: "deploy script",
    });
    expect(body.token).toMatch(/^u-[A-Za-z0-9_-]+$/);
    expect(body.token.length).toBeGreaterThanOrEqual(45);
    expect(await resolveToken(body.token)).toEqual({ userId, tokenId: body.tokenId });

    const listed = await admin(["tokens", "list", userId]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(body.token);
    expect(JSON.parse(listed.stdout)).toEqual({
      userId,
      tokens: [
        {
          tokenId: body.tokenId,
          name: "deploy script",
          masked: `u-…${body.token.slice(-4)}`,
          createdAt: expect.any(String),
        },
      ],
    });

    const [revoked, unknownToken] = await Promise.all([
      adminJson(["tokens", "revoke", userId, body.tokenId]),
      admin(["tokens", "revoke", userId, "tok_0000000000000000"]),
    ]);
    expect(revoked).toEqual({ userId, tokenId: body.tokenId, revoked: true });
    expect(await resolveToken(body.token)).toBeUndefined();
    expect((await storedItem(keys.user(userId)))?.tokens).toEqual({});
    expectOneLineError(unknownToken, /Token not found/);
  });

  it("users grant-system-admin and revoke-system-admin flip the flag; an unknown user fails", async () => {
    const userId = await newUser("operator");
    const [granted, unknown] = await Promise.all([
      adminJson(["users", "grant-system-admin", userId]),
      admin(["users", "grant-system-admin", "no-such-user"]),
    ]);
    expect(granted).toMatchObject({ userId, systemAdmin: true });
    expect((await storedItem(keys.user(userId)))?.systemAdmin).toBe(true);
    expectOneLineError(unknown, /User not found/);

    const revoked = await adminJson(["users", "revoke-system-admin", userId]);
    expect(revoked).toMatchObject({ userId, systemAdmin: false });
    expect((await storedItem(keys.user(userId)))?.systemAdmin).toBe(false);
  });

  it("msps create writes the MSP, its configuration, the msp_owner member and the user's userMsps", async () => {
    const owner = await newUser("msp-owner");
    const unknownOwnerName = `Ghost MSP ${Date.now()}`;
    const [created, unknownOwner] = await Promise.all([
      adminJson(["msps", "create", "--name", "  Northwind Managed IT ", "--owner", owner]),
      admin(["msps", "create", "--name", unknownOwnerName, "--owner", "no-such-user"]),
    ]);
    const mspId = created.msp.mspId as string;
    expect(created).toEqual({
      msp: {
        mspId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        mspName: "Northwind Managed IT",
        mspCreated: expect.any(String),
        mspUpdated: expect.any(String),
      },
      configuration: {
        configurationType: "msp",
        mspId,
        billingType: "stripe",
        billingStatus: "active",
        paymentMethodOnFile: false,
        paymentMethodUpdated: null,
        promotionalCodes: null,
        rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
        configCreated: expect.any(String),
        configUpdated: expect.any(String),
      },
      members: [{ userId: owner, roles: ["msp_owner"] }],
    });

    expect(await storedItem(keys.msp(mspId))).toMatchObject({ mspId, mspName: "Northwind Managed IT" });
    expect(await storedItem(keys.mspConfig(mspId))).toMatchObject({
      mspId,
      billingType: "stripe",
      billingStatus: "active",
      promotionalCodes: null,
      rates: { apiSeconds: 1, storageGB: 1, aiTokens: 1, plan: 1 },
    });
    expect(await storedItem(keys.mspMember(mspId, owner))).toMatchObject({
      mspId,
      userId: owner,
      roles: ["msp_owner"],
    });
    const user = await storedItem(keys.user(owner));
    expect(user?.userMsps).toBeInstanceOf(Set);
    expect([...(user!.userMsps as Set<string>)]).toEqual([mspId]);

    const shown = await adminJson(["msps", "get", mspId]);
    expect(shown).toEqual(created);

    // Unknown owner: one clear line, and the transaction wrote nothing (no MSP of that name).
    expectOneLineError(unknownOwner, /Owner user not found/);
    // A test-only Scan, on the low-level client: the project's document client has no Scan.
    const leftovers = await new DynamoDBClient({ region: getConfig().homeRegion }).send(
      new ScanCommand({
        TableName: getConfig().tableName,
        FilterExpression: "mspName = :name OR (entity = :member AND userId = :ghost)",
        ExpressionAttributeValues: marshallItem({
          ":name": unknownOwnerName,
          ":member": "mspMember",
          ":ghost": "no-such-user",
        }),
        ConsistentRead: true,
      }),
    );
    expect(leftovers.Items).toEqual([]);
  });

  it("msps set-rates changes the given rates only; set-billing suspends; bad input fails in one line", async () => {
    const owner = await newUser("rates-owner");
    const { mspId } = (await adminJson(["msps", "create", "--name", "Rated MSP", "--owner", owner])).msp;
    const [rated, none, outOfRange, unknownMsp, badStatus] = await Promise.all([
      adminJson(["msps", "set-rates", mspId, "--api-seconds", "0.75", "--plan", "0.8"]),
      admin(["msps", "set-rates", mspId]),
      admin(["msps", "set-rates", mspId, "--ai-tokens", "1.5"]),
      admin(["msps", "set-rates", "no-such-msp", "--plan", "0.9"]),
      admin(["msps", "set-billing", mspId, "paused"]),
    ]);
    expect(rated).toMatchObject({ mspId, rates: { apiSeconds: 0.75, storageGB: 1, aiTokens: 1, plan: 0.8 } });
    expect((await storedItem(keys.mspConfig(mspId)))?.rates).toEqual({
      apiSeconds: 0.75,
      storageGB: 1,
      aiTokens: 1,
      plan: 0.8,
    });
    expectOneLineError(none, /at least one of --api-seconds/);
    expect(outOfRange.code).not.toBe(0);
    expect(outOfRange.stderr).toMatch(/greater than 0 and at most 1/);
    expectOneLineError(unknownMsp, /MSP not found/);
    expect(badStatus.code).not.toBe(0);
    expect(badStatus.stderr).toMatch(/Allowed choices are active, suspended/);
    expect((await storedItem(keys.mspConfig(mspId)))?.rates).toMatchObject({ aiTokens: 1 });

    const suspended = await adminJson(["msps", "set-billing", mspId, "suspended"]);
    expect(suspended).toMatchObject({ mspId, billingStatus: "suspended" });
    expect((await storedItem(keys.mspConfig(mspId)))?.billingStatus).toBe("suspended");
    expect((await adminJson(["msps", "set-billing", mspId, "active"])).billingStatus).toBe("active");
  });

  it("clients set-plan moves a client to another tier; unknown client and tier fail in one line", async () => {
    const owner = await newUser("plan-owner");
    const { clientId } = await createClient(owner, "Planned");
    expect((await storedItem(keys.clientConfig(clientId)))?.planTier).toBe("basic");
    const [moved, unknownClient, unknownTier] = await Promise.all([
      adminJson(["clients", "set-plan", clientId, "team"]),
      admin(["clients", "set-plan", "no-such-client", "team"]),
      admin(["clients", "set-plan", clientId, "gold"]),
    ]);
    expect(moved).toEqual({
      clientId,
      planTier: "team",
      planStatus: "active",
      configUpdated: expect.any(String),
    });
    expect(await storedItem(keys.clientConfig(clientId))).toMatchObject({
      planTier: "team",
      planStatus: "active",
      configUpdated: moved.configUpdated,
    });
    expectOneLineError(unknownClient, /Client not found/);
    expectOneLineError(unknownTier, /invalid for argument 'tier'/);
    // The conditional update did not create a configuration for the unknown client.
    expect(await storedItem(keys.clientConfig("no-such-client"))).toBeUndefined();
  });

  it("clients set-overrides replaces the given lists with known values; get-overrides prints them; bad input fails in one line", async () => {
    const owner = await newUser("overrides-owner");
    const { clientId } = await createClient(owner, "Overridden");
    const set = await adminJson([
      "clients",
      "set-overrides",
      clientId,
      "--feature",
      "core_api_rate_limit_x10",
      "--promo",
      "extended_trial",
    ]);
    expect(set).toEqual({
      clientId,
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: ["extended_trial"],
      configUpdated: expect.any(String),
    });
    const [cleared, unknownValue, repeated, nothing, unknownClient] = await Promise.all([
      adminJson(["clients", "set-overrides", clientId, "--clear-promos"]),
      admin(["clients", "set-overrides", clientId, "--feature", "unlimited_everything"]),
      admin(["clients", "set-overrides", clientId, "--promo", "extended_trial", "extended_trial"]),
      admin(["clients", "set-overrides", clientId]),
      admin(["clients", "set-overrides", "no-such-client", "--clear-features"]),
    ]);
    // --clear-promos leaves the features as they are.
    expect(cleared).toMatchObject({ featureOverrides: ["core_api_rate_limit_x10"], promoOverrides: [] });
    expect(await adminJson(["clients", "get-overrides", clientId])).toEqual(cleared);
    expect(await storedItem(keys.clientConfig(clientId))).toMatchObject({
      featureOverrides: ["core_api_rate_limit_x10"],
      promoOverrides: [],
    });
    expectOneLineError(
      unknownValue,
      /'unlimited_everything' is invalid\. Allowed choices are core_api_rate_limit_x10/,
    );
    expectOneLineError(repeated, /promoOverrides: must not repeat a value/);
    expectOneLineError(nothing, /give at least one of --feature, --promo/);
    expectOneLineError(unknownClient, /Client not found/);
    expect(await storedItem(keys.clientConfig("no-such-client"))).toBeUndefined();
  });

  it("notifications send-system stores a system notification", async () => {
    const title = `Maintenance ${Date.now()}`;
    const [sent, empty] = await Promise.all([
      adminJson(["notifications", "send-system", "--title", title, "--message", "Read-only on Sunday"]),
      admin(["notifications", "send-system", "--title", " ", "--message", "x"]),
    ]);
    expect(sent).toEqual({
      notificationId: expect.any(String),
      type: "system",
      title,
      message: "Read-only on Sunday",
      read: false,
      createdAt: expect.any(String),
      pKey: "SYSTEM",
      sKey: sent.notificationId,
    });
    expect(
      await storedItem({ pKey: keys.systemNotificationPartition(), sKey: sent.notificationId }),
    ).toMatchObject({ type: "system", title, message: "Read-only on Sunday", read: false });
    expectOneLineError(empty, /--title/);
  });

  it("--local <file> takes the endpoint, table, region and APP_URL from a stack file", async () => {
    const file = join(tempDir, "stack.json");
    await writeFile(
      file,
      JSON.stringify({
        baseUrl: "http://127.0.0.1:1",
        regions: { "us-east-1": "http://127.0.0.1:2", "eu-west-1": "http://127.0.0.1:3" },
        userId: "unused",
        token: "unused",
        awsEndpointUrl: process.env.AWS_ENDPOINT_URL,
        tableName: getConfig().tableName,
        homeRegion: getConfig().homeRegion,
        appUrl: "http://localhost:4321",
      }),
    );
    // Nothing about the stack in the environment: without --local the CLI cannot know the table.
    const env = { ...process.env };
    for (const name of [
      "AWS_ENDPOINT_URL",
      "TABLE_NAME",
      "HOME_REGION",
      "REGIONS",
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
      "APP_URL",
    ]) {
      delete env[name];
    }
    const email = uniqueEmail("local");
    const create = ["users", "create", "--email", email, "--first-name", "Lo", "--last-name", "Cal"];
    const [created, withoutLocal, missingFile] = await Promise.all([
      adminJson(["--local", file, ...create], env),
      admin(create, env),
      admin(["--local", join(tempDir, "missing.json"), "users", "get", email], env),
    ]);
    expect(created).toMatchObject({ userEmail: email });
    expect(await storedItem(keys.user(created.userId))).toMatchObject({ userEmail: email });
    // The set-password e-mail links to the local stack's APP_URL.
    const [setPassword] = (await sentEmails(email)).filter((mail) => mail.subject === "Set your password");
    expect(setPassword?.body).toContain(
      `http://localhost:4321/reset-password?email=${encodeURIComponent(email)}&#38;code=`,
    );
    expectOneLineError(withoutLocal, /TABLE_NAME/);
    expectOneLineError(missingFile, /cannot read .*missing\.json/);
  });

  it("--help of the CLI and of every command exits 0 and shows the command with an example", async () => {
    const commands = [
      [],
      ["users"],
      ["users", "create"],
      ["users", "get"],
      ["users", "grant-system-admin"],
      ["users", "revoke-system-admin"],
      ["tokens", "issue"],
      ["tokens", "list"],
      ["tokens", "revoke"],
      ["msps", "create"],
      ["msps", "get"],
      ["msps", "set-rates"],
      ["msps", "set-billing"],
      ["clients", "set-plan"],
      ["clients", "get-overrides"],
      ["clients", "set-overrides"],
      ["notifications", "send-system"],
      ["backfill-payment-customers"],
    ];
    // A few at a time: 18 tsx starts at once outlast the 60 s timeout on a loaded 2-core machine.
    const results = await inBatches(commands, 4, (command) => admin([...command, "--help"]));
    results.forEach((result, index) => {
      const command = commands[index] as string[];
      expect(result, command.join(" ")).toMatchObject({ code: 0, stderr: "" });
      expect(result.stdout).toContain(`Usage: admin ${command.join(" ")}`.trimEnd());
      if (command.length !== 1) {
        expect(result.stdout).toMatch(/Examples?:\n {2}\$ npm run admin -- /);
        if (command.length === 2) expect(result.stdout).toContain(`npm run admin -- ${command.join(" ")}`);
      }
    });
  });
});

/** Every command the program declares that runs an action (a leaf), as the words that name it. */
function leafCommands(command: Command, path: string[] = []): string[][] {
  if (command.commands.length === 0) return [path];
  return command.commands.flatMap((sub) => leafCommands(sub, [...path, sub.name()]));
}

async function inBatches<T, R>(items: T[], size: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += size)
    results.push(...(await Promise.all(items.slice(start, start + size).map(run))));
  return results;
}

/** Valid arguments for each command, given the ids of a set-up (a user, a token, a client, an MSP). */
type Ids = { userId: string; tokenId: string; clientId: string; mspId: string };
const VALID_ARGS: Record<string, (ids: Ids) => string[]> = {
  "users create": () => ["--email", uniqueEmail("every"), "--first-name", "Every", "--last-name", "Command"],
  "users get": ({ userId }) => [userId],
  "users grant-system-admin": ({ userId }) => [userId],
  "users revoke-system-admin": ({ userId }) => [userId],
  "tokens issue": ({ userId }) => [userId, "--name", "every command"],
  "tokens list": ({ userId }) => [userId],
  "tokens revoke": ({ userId, tokenId }) => [userId, tokenId],
  "msps create": ({ userId }) => ["--name", "Every Command MSP", "--owner", userId],
  "msps get": ({ mspId }) => [mspId],
  "msps set-rates": ({ mspId }) => [mspId, "--plan", "0.9"],
  "msps set-billing": ({ mspId }) => [mspId, "active"],
  "clients set-plan": ({ clientId }) => [clientId, "team"],
  "clients set-billing": ({ clientId }) => [clientId, "active"],
  "clients get-overrides": ({ clientId }) => [clientId],
  "clients set-overrides": ({ clientId }) => [clientId, "--clear-promos"],
  "notifications send-system": () => ["--title", "Every command", "--message", "stdout is one document"],
  "backfill-payment-customers": () => [],
};

// `tokens issue` printed its log line on stdout after its JSON, so `| jq` failed. The test
// suites run with LOG_LEVEL=silent; these runs log everything (debug), as an operator's may.
describe("admin CLI: stdout is the result and nothing else", { timeout: 180_000 }, () => {
  it("every command the program declares prints exactly one JSON document on stdout, its logs on stderr", async () => {
    const commands = leafCommands(buildProgram());
    // A new command fails here until it has valid arguments above: then it is covered.
    expect(commands.map((words) => words.join(" ")).sort()).toEqual(Object.keys(VALID_ARGS).sort());

    const userId = await newUser("every-command");
    const { tokenId } = await issueToken(userId, { tokenName: "to revoke" });
    const { clientId } = await createClient(userId, "Every Command");
    const { msp } = await createMsp({ name: "Every Command Existing MSP", ownerUserId: userId });
    const ids: Ids = { userId, tokenId, clientId, mspId: msp.mspId };
    const env = { ...process.env, LOG_LEVEL: "debug" };

    // A few at a time: each run is a tsx start (about a second of CPU) on a shared 2-core machine.
    const results = await inBatches(commands, 4, (words) =>
      admin([...words, ...VALID_ARGS[words.join(" ")]!(ids)], env),
    );
    results.forEach((result, index) => {
      const name = (commands[index] as string[]).join(" ");
      expect(result.code, `${name}: ${result.stderr}`).toBe(0);
      expect(() => JSON.parse(result.stdout), `${name} stdout: ${result.stdout}`).not.toThrow();
      expect(JSON.parse(result.stdout), name).toBeTypeOf("object");
    });
    // The logs were written, on stderr: the token's issue is logged there, after the warning.
    const issued = results[commands.findIndex((words) => words.join(" ") === "tokens issue")] as CliResult;
    const [warning, ...logLines] = issued.stderr.trimEnd().split("\n");
    expect(warning).toBe(TOKEN_WARNING);
    expect(logLines.map((line) => JSON.parse(line))).toContainEqual(
      expect.objectContaining({ level: "info", message: "API token issued", userId }),
    );
  });

  it("a failure prints nothing on stdout and ends stderr with one error line, whatever LOG_LEVEL shows", async () => {
    const env = { ...process.env, LOG_LEVEL: "debug" };
    const [unknownToken, unknownOption] = await Promise.all([
      admin(["tokens", "revoke", await newUser("failure"), "tok_0000000000000000"], env),
      admin(["tokens", "list", "--no-such-option"], env),
    ]);
    for (const result of [unknownToken, unknownOption]) {
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      const lines = result.stderr.trimEnd().split("\n");
      expect(lines.at(-1)).toMatch(/^error: /);
      // Any line before it is a log line (JSON), never a stack trace.
      for (const line of lines.slice(0, -1)) expect(() => JSON.parse(line), line).not.toThrow();
    }
    // A refusal of the domain is expected: one line, no hint of a stack trace.
    const lastLine = (result: CliResult) => result.stderr.trimEnd().split("\n").at(-1);
    expect(lastLine(unknownToken)).toBe("error: Token not found");
    expect(lastLine(unknownOption)).toBe("error: unknown option '--no-such-option'");
  });
});
