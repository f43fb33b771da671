/**
 * A redacted answer (lib/data-plane/answer-redaction.ts) and the one list of a request's secrets
 * (requestSecretValues, stages/log.ts) that it and the request log use: the stored secrets of
 * both credentials and the token fetched for the target.
 */
import { describe, expect, it } from "vitest";
import { redactAnswer } from "#lib/data-plane/answer-redaction.ts";
import type { DataPlaneResponse } from "#lib/data-plane/context.ts";
import { REDACTED } from "#lib/data-plane/request-log.ts";
import { requestSecretValues } from "#lib/data-plane/stages/log.ts";
import { secretValues } from "#lib/vault/secret-redaction.ts";
import { CALLER_KEY, context, located, runtime, TARGET_TOKEN } from "./stages/fixtures.ts";

const FETCHED = "fetched-access-token-5f2c1e9a";
const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("requestSecretValues", () => {
  it("the secrets of both credentials and the fetched token", () => {
    const ctx = located(runtime());
    ctx.dynamicToken = FETCHED;
    expect(requestSecretValues(ctx, secretValues)).toEqual(
      expect.arrayContaining([CALLER_KEY, TARGET_TOKEN, FETCHED]),
    );
  });
  it("no fetched token: only the stored secrets; no configuration: none", () => {
    expect(requestSecretValues(located(runtime()), secretValues).filter(Boolean)).toEqual(
      expect.arrayContaining([CALLER_KEY, TARGET_TOKEN]),
    );
    expect(requestSecretValues(context(), secretValues).filter(Boolean)).toEqual([]);
  });
});

describe("redactAnswer", () => {
  const echo = (): DataPlaneResponse => ({
    status: 200,
    headers: {
      "x-echo": `Bearer ${FETCHED}`,
      "x-b64": b64(`{"authorization":"Bearer ${FETCHED}"}`),
      "x-plain": "ok",
    },
    cookies: [`seen=${encodeURIComponent(`${TARGET_TOKEN}`)}; Path=/api/p`],
    body: Buffer.from(
      JSON.stringify({ url: `/x?token=${encodeURIComponent(FETCHED)}`, key: CALLER_KEY, b: b64(FETCHED) }),
    ),
  });

  it("replaces every form of the fetched token and the stored secrets in headers, cookies and body", () => {
    const ctx = located(runtime());
    ctx.dynamicToken = FETCHED;
    const shown = redactAnswer(ctx, echo(), requestSecretValues);
    const text = JSON.stringify({ ...shown, body: shown.body.toString("utf8") });
    for (const secret of [FETCHED, TARGET_TOKEN, CALLER_KEY]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(b64(secret).slice(4, 20));
    }
    expect(shown.headers["x-echo"]).toBe(`Bearer ${REDACTED}`);
    expect(shown.headers["x-plain"]).toBe("ok");
    expect(shown.cookies).toEqual([`seen=${REDACTED}; Path=/api/p`]);
    expect(shown.status).toBe(200);
  });

  it("without the fetched token in the context, the token stays (what the request log and the MCP tool lacked)", () => {
    const shown = redactAnswer(located(runtime()), echo(), requestSecretValues);
    expect(shown.headers["x-echo"]).toBe(`Bearer ${FETCHED}`);
  });

  it("an answer with nothing to redact is returned as it is", () => {
    const response = echo();
    expect(redactAnswer(context(), response, requestSecretValues)).toBe(response);
  });
});
