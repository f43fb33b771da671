import { afterEach, describe, expect, it } from "vitest";
import {
  dynamo,
  isServiceUnavailable,
  kms,
  REMOVED_MIDDLEWARE,
  resetClients,
  SDK_TIMEOUT_DEFAULTS,
  sdkCallBounds,
  ses,
} from "#lib/aws/clients.ts";
import { credentialsFromEnv, defaultProvider } from "#lib/aws/env-credentials.ts";

const named = (name: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name, ...extra });

describe("isServiceUnavailable", () => {
  it.each([
    named("TimeoutError"),
    named("ProvisionedThroughputExceededException", { $metadata: { httpStatusCode: 400 } }),
    named("ThrottlingException"),
    named("TransactionConflictException"),
    named("InternalServerError", { $metadata: { httpStatusCode: 500 } }),
    named("SomethingNew", { $metadata: { httpStatusCode: 503 } }),
    named("KMSInternalException"),
    Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }),
    Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
  ])("%s is unavailable (503)", (error) => {
    expect(isServiceUnavailable(error)).toBe(true);
  });

  it.each([
    named("ConditionalCheckFailedException", { $metadata: { httpStatusCode: 400 } }),
    named("ValidationException", { $metadata: { httpStatusCode: 400 } }),
    named("AccessDeniedException", { $metadata: { httpStatusCode: 400 } }),
    new Error("Unsupported type passed: [object Object]"),
    new TypeError("x is undefined"),
    "TimeoutError",
    undefined,
  ])("%s is a defect (500), not unavailability", (error) => {
    expect(isServiceUnavailable(error)).toBe(false);
  });
});

describe("sdkCallBounds", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of ["SDK_CONNECT_TIMEOUT_MS", "SDK_REQUEST_TIMEOUT_MS", "SDK_MAX_ATTEMPTS"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  it("bounds every call by default, and throws on the request timeout (not only a warning)", () => {
    for (const name of ["SDK_CONNECT_TIMEOUT_MS", "SDK_REQUEST_TIMEOUT_MS", "SDK_MAX_ATTEMPTS"])
      delete process.env[name];
    expect(sdkCallBounds()).toEqual({
      maxAttempts: SDK_TIMEOUT_DEFAULTS.maxAttempts,
      requestHandler: {
        connectionTimeout: SDK_TIMEOUT_DEFAULTS.connectTimeoutMs,
        requestTimeout: SDK_TIMEOUT_DEFAULTS.requestTimeoutMs,
        throwOnRequestTimeout: true,
        socketTimeout: SDK_TIMEOUT_DEFAULTS.requestTimeoutMs,
      },
    });
    // The worst case of one failing call fits the data plane's budget twice after a 60 s target
    // (single-use deletion and the request log) inside the 75 s Lambda timeout.
    const worstCallMs = SDK_TIMEOUT_DEFAULTS.maxAttempts * SDK_TIMEOUT_DEFAULTS.requestTimeoutMs + 1000;
    expect(60_000 + 2 * worstCallMs).toBeLessThan(75_000);
  });

  it("takes overrides from the environment and refuses nonsense", () => {
    process.env.SDK_CONNECT_TIMEOUT_MS = "300";
    process.env.SDK_REQUEST_TIMEOUT_MS = "700";
    process.env.SDK_MAX_ATTEMPTS = "1";
    expect(sdkCallBounds()).toMatchObject({
      maxAttempts: 1,
      requestHandler: { connectionTimeout: 300, requestTimeout: 700, socketTimeout: 700 },
    });
    process.env.SDK_MAX_ATTEMPTS = "0";
    expect(() => sdkCallBounds()).toThrow(/SDK_MAX_ATTEMPTS/);
    process.env.SDK_MAX_ATTEMPTS = "2";
    process.env.SDK_REQUEST_TIMEOUT_MS = "soon";
    expect(() => sdkCallBounds()).toThrow(/SDK_REQUEST_TIMEOUT_MS/);
  });
});

describe("clients", () => {
  it("drop the logger and user-agent middleware (per-call CPU), keep retry and signing", async () => {
    process.env.AWS_ACCESS_KEY_ID ??= "test";
    process.env.AWS_SECRET_ACCESS_KEY ??= "test";
    resetClients();
    const stacks = [
      dynamo("us-east-1").middlewareStack,
      (await kms("us-east-1")).middlewareStack,
      ses("us-east-1").middlewareStack,
    ];
    for (const stack of stacks) {
      const names = stack.identify().join("\n");
      for (const removed of REMOVED_MIDDLEWARE) expect(names).not.toContain(removed);
      expect(names).toContain("retryMiddleware");
      expect(names).toContain("httpSigningMiddleware");
    }
    resetClients();
  });

  it("create one KMS client per region, loaded on first use, shared by concurrent callers", async () => {
    resetClients();
    const [a, b] = await Promise.all([kms("eu-west-1"), kms("eu-west-1")]);
    expect(a).toBe(b);
    expect(await a.config.region()).toBe("eu-west-1");
    expect(await kms("us-east-1")).not.toBe(a);
    resetClients();
  });
});

describe("environment credentials (the data-plane bundle's credential provider)", () => {
  it("reads the key, secret, session token and expiration", () => {
    expect(
      credentialsFromEnv({
        AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
        AWS_SECRET_ACCESS_KEY: "secret",
        AWS_SESSION_TOKEN: "token",
        AWS_CREDENTIAL_EXPIRATION: "2030-01-01T00:00:00Z",
      }),
    ).toEqual({
      accessKeyId: "AKIDEXAMPLE",
      secretAccessKey: "secret",
      sessionToken: "token",
      expiration: new Date("2030-01-01T00:00:00Z"),
    });
    expect(credentialsFromEnv({ AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b" })).toEqual({
      accessKeyId: "a",
      secretAccessKey: "b",
    });
  });

  it("fails naming the variables when they are missing", async () => {
    expect(() => credentialsFromEnv({ AWS_ACCESS_KEY_ID: "a" })).toThrow(/AWS_SECRET_ACCESS_KEY/);
    const saved = { ...process.env };
    try {
      delete process.env.AWS_ACCESS_KEY_ID;
      await expect(defaultProvider()()).rejects.toThrow(/AWS_ACCESS_KEY_ID/);
      process.env.AWS_ACCESS_KEY_ID = "x";
      process.env.AWS_SECRET_ACCESS_KEY = "y";
      await expect(defaultProvider()()).resolves.toMatchObject({ accessKeyId: "x", secretAccessKey: "y" });
    } finally {
      for (const name of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
    }
  });
});
