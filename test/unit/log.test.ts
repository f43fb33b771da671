/** Structured logging: one JSON line per entry, secrets redacted at any depth. */
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  ALARMED_METRICS,
  describeError,
  log,
  logReady,
  METRIC_NAMESPACE,
  metricFields,
  setCorrelationId,
} from "#lib/log.ts";

let stdout: string[];
let stderr: string[];
const savedLevel = process.env.LOG_LEVEL;

beforeAll(async () => {
  await logReady();
});

beforeEach(() => {
  stdout = [];
  stderr = [];
  process.env.LOG_LEVEL = "info";
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    stdout.push(String(chunk));
    return true;
  });
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    stderr.push(String(chunk));
    return true;
  });
});

afterEach(() => {
  vi.restoreAllMocks();
  if (savedLevel === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = savedLevel;
});

const lines = (written: string[]) => written.map((line) => JSON.parse(line) as Record<string, any>);

describe("log", () => {
  it("writes one JSON line (Powertools Logger) with level, message, timestamp, service and the request id as correlation id", () => {
    log.info("Hello", { requestId: "r-1", count: 2 });
    expect(stdout).toHaveLength(1);
    expect(stdout[0]).toMatch(/\n$/);
    expect(stdout[0]?.trimEnd()).not.toContain("\n");
    const [entry] = lines(stdout);
    expect(entry).toEqual({
      level: "info",
      message: "Hello",
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      service: "proxy-gateway",
      correlation_id: "r-1",
      requestId: "r-1",
      count: 2,
    });
  });

  it("tags lines without a request id with the invocation's correlation id", () => {
    setCorrelationId("api-req-7");
    try {
      log.info("Inside an API call");
      log.info("Own request", { requestId: "r-2" });
    } finally {
      setCorrelationId(undefined);
    }
    log.info("After");
    expect(lines(stdout).map((e) => e.correlation_id)).toEqual(["api-req-7", "r-2", undefined]);
  });

  it("sends warnings and errors to stderr", () => {
    log.warn("careful");
    log.error("broken");
    expect(stdout).toEqual([]);
    expect(lines(stderr).map((e) => e.level)).toEqual(["warn", "error"]);
  });

  it("redacts secret-looking keys at the top level", () => {
    log.info("Request", {
      authorization: "u-secretvalue1",
      Authorization: "u-secretvalue2",
      token: "u-secretvalue3",
      clientSecret: "s3",
      password: "hunter2",
      keyValue: "kv",
      cookie: "c=1",
      apiKey: "ak",
      "x-api-key": "ak2",
      userId: "user-1",
    });
    const [entry] = lines(stdout);
    expect(entry).toMatchObject({
      authorization: "[redacted]",
      Authorization: "[redacted]",
      token: "[redacted]",
      clientSecret: "[redacted]",
      password: "[redacted]",
      keyValue: "[redacted]",
      cookie: "[redacted]",
      apiKey: "[redacted]",
      "x-api-key": "[redacted]",
      userId: "user-1",
    });
    for (const secret of ["u-secretvalue", "hunter2", "c=1"]) expect(stdout[0]).not.toContain(secret);
  });

  it("redacts inside nested objects and arrays", () => {
    log.info("Nested", {
      request: { headers: { Authorization: "u-nestedtoken", "Content-Type": "application/json" } },
      credentials: [
        { name: "first", secretValue: "s-1" },
        { name: "second", nested: [{ password: "p-2" }] },
      ],
      tokens: ["u-a", "u-b"],
    });
    const [entry] = lines(stdout);
    expect(entry?.request).toEqual({
      headers: { Authorization: "[redacted]", "Content-Type": "application/json" },
    });
    expect(entry?.credentials).toEqual([
      { name: "first", secretValue: "[redacted]" },
      { name: "second", nested: [{ password: "[redacted]" }] },
    ]);
    expect(entry?.tokens).toBe("[redacted]");
    for (const secret of ["u-nestedtoken", "s-1", "p-2", "u-a", "u-b"])
      expect(stdout[0]).not.toContain(secret);
  });

  it("redacts the accounts' secrets: codes, session cookies, verifiers, by key (issue 21)", () => {
    log.info("Accounts", {
      code: "123456",
      Code: "654321",
      verificationCode: "111111",
      resetCode: "222222",
      codeHash: "h-1",
      codeSalt: "s-salt",
      otp: "333333",
      session: "user.sessionsecret1",
      sessionCookie: "user.sessionsecret2",
      "set-cookie": "__Host-session=user.sessionsecret3",
      cookies: ["session=user.sessionsecret4"],
      code_verifier: "verifier-value",
      newPassword: "new-hunter2",
      passwordHash: "scrypt$hash",
      statusCode: 401,
      errorCode: "ConditionalCheckFailed",
      sessionId: "0d3c1d6e-9d1e-4f55-bd7e-3f1c7b1a4e21",
    });
    const [entry] = lines(stdout);
    for (const key of [
      "code",
      "Code",
      "verificationCode",
      "resetCode",
      "codeHash",
      "codeSalt",
      "otp",
      "session",
      "sessionCookie",
      "set-cookie",
      "cookies",
      "code_verifier",
      "newPassword",
      "passwordHash",
    ])
      expect(entry?.[key], key).toBe("[redacted]");
    // Not secrets: kept, so lines stay useful.
    expect(entry).toMatchObject({
      statusCode: 401,
      errorCode: "ConditionalCheckFailed",
      sessionId: "0d3c1d6e-9d1e-4f55-bd7e-3f1c7b1a4e21",
    });
    for (const secret of [
      "123456",
      "654321",
      "111111",
      "222222",
      "333333",
      "sessionsecret",
      "verifier-value",
      "hunter2",
    ])
      expect(stdout[0]).not.toContain(secret);
  });

  it("redacts secrets inside text: a raw token, the session cookie, JSON, query and form fields", () => {
    const token = `u-${"A".repeat(43)}`;
    const cookie = "0d3c1d6e-9d1e-4f55-bd7e-3f1c7b1a4e21.BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
    log.warn(`Refused ${token}`, {
      body: JSON.stringify({ email: "ada@example.test", password: "pw-in-json", code: "424242" }),
      url: "/verify-email?email=ada%40example.test&code=515151",
      form: "grant_type=refresh_token&refresh_token=g-x.rt-secret&code_verifier=cv-secret",
      header: `Cookie: theme=dark; __Host-session=${cookie}`,
      note: `plain session=${cookie}`,
      errorMessage: `Bad token ${token}`,
    });
    const [entry] = lines(stderr);
    expect(entry?.message).toBe("Refused u-[redacted]");
    expect(JSON.parse(entry?.body)).toEqual({
      email: "ada@example.test",
      password: "[redacted]",
      code: "[redacted]",
    });
    expect(entry?.url).toBe("/verify-email?email=ada%40example.test&code=[redacted]");
    expect(entry?.form).toBe("grant_type=refresh_token&refresh_token=[redacted]&code_verifier=[redacted]");
    expect(entry?.header).toBe("Cookie: theme=dark; __Host-session=[redacted]");
    for (const secret of [
      token,
      cookie,
      "BBBBBBBB",
      "pw-in-json",
      "424242",
      "515151",
      "rt-secret",
      "cv-secret",
    ])
      expect(stderr[0]).not.toContain(secret);
  });

  it("does not modify the caller's object", () => {
    const fields = { headers: { authorization: "u-keep" } };
    log.info("x", fields);
    expect(fields.headers.authorization).toBe("u-keep");
  });

  it("is silent with LOG_LEVEL=silent, and writes debug only with LOG_LEVEL=debug", () => {
    log.debug("hidden at info");
    expect(stdout).toEqual([]);
    process.env.LOG_LEVEL = "debug";
    log.debug("shown");
    expect(lines(stdout).map((e) => e.message)).toEqual(["shown"]);
    process.env.LOG_LEVEL = "silent";
    log.error("nothing");
    log.info("nothing");
    expect(stderr).toEqual([]);
    expect(stdout).toHaveLength(1);
  });
});

describe("LOG_LEVEL thresholds", () => {
  it("writes the lines at or above the level: warn hides debug and info, error hides warn too", () => {
    const writeAll = () => {
      for (const level of ["debug", "info", "warn", "error"] as const) log[level](`${level} line`);
    };
    const written = () => [...lines(stdout), ...lines(stderr)].map((e) => e.message);
    process.env.LOG_LEVEL = "warn";
    writeAll();
    expect(written()).toEqual(["warn line", "error line"]);
    stdout.length = 0;
    stderr.length = 0;
    process.env.LOG_LEVEL = "error";
    writeAll();
    expect(written()).toEqual(["error line"]);
    stdout.length = 0;
    stderr.length = 0;
    // An unknown value is the default, info.
    process.env.LOG_LEVEL = "verbose";
    writeAll();
    expect(written().sort()).toEqual(["error line", "info line", "warn line"]);
  });
});

describe("describeError", () => {
  it("keeps name, message and stack of an Error, and stringifies anything else", () => {
    const error = new TypeError("bad thing");
    expect(describeError(error)).toEqual({
      errorName: "TypeError",
      errorMessage: "bad thing",
      stack: error.stack,
    });
    expect(describeError("plain")).toEqual({ errorMessage: "plain" });
  });
});

describe("metricFields", () => {
  it("makes a log line an embedded-metric-format record of one count", () => {
    const fields = metricFields(ALARMED_METRICS.requestLogWriteFailures, "data-plane");
    expect(fields).toMatchObject({
      _aws: {
        Timestamp: expect.any(Number),
        CloudWatchMetrics: [
          {
            Namespace: METRIC_NAMESPACE,
            Dimensions: [["Service"]],
            Metrics: [{ Name: "RequestLogWriteFailures", Unit: "Count" }],
          },
        ],
      },
      Service: "data-plane",
      RequestLogWriteFailures: 1,
    });
  });
});
