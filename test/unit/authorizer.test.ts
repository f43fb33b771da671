/** The authorizer's pure parts: its policy resource (one ARN for the whole stage) and its header reading. */
import { describe, expect, it } from "vitest";
import { requestHeader, stageWideArn } from "#lib/domain/authorizer.ts";

const PREFIX = "arn:aws:execute-api:us-east-1:123456789012:a1b2c3d4e5";

describe("stageWideArn", () => {
  it.each([
    `${PREFIX}/prod/GET/api/users`,
    `${PREFIX}/prod/DELETE/api/clients/c-1/members/u-2`,
    `${PREFIX}/prod/POST/`,
    `${PREFIX}/prod/*/*`,
  ])("maps %s to every method and path of the stage", (methodArn) => {
    expect(stageWideArn(methodArn)).toBe(`${PREFIX}/prod/*/*`);
  });

  it("keeps the region, account, API and stage", () => {
    expect(stageWideArn("arn:aws:execute-api:eu-west-1:000000000000:local/local/GET/api/users")).toBe(
      "arn:aws:execute-api:eu-west-1:000000000000:local/local/*/*",
    );
  });

  it("returns an ARN without a stage unchanged rather than widening it further", () => {
    expect(stageWideArn(PREFIX)).toBe(PREFIX);
    expect(stageWideArn(`${PREFIX}/prod`)).toBe(`${PREFIX}/prod`);
    expect(stageWideArn("")).toBe("");
  });
});

describe("requestHeader", () => {
  it("finds a header whatever its spelling, preferring the multi-value map", () => {
    expect(
      requestHeader({ headers: { authorization: "u-x" }, multiValueHeaders: null }, "Authorization"),
    ).toBe("u-x");
    expect(
      requestHeader(
        { headers: { Authorization: "last" }, multiValueHeaders: { Authorization: ["first", "last"] } },
        "authorization",
      ),
    ).toBe("first, last");
  });

  it("joins repeated Cookie headers (HTTP/2 may split them) with '; '", () => {
    expect(
      requestHeader({ headers: { cookie: "b=2" }, multiValueHeaders: { cookie: ["a=1", "b=2"] } }, "Cookie"),
    ).toBe("a=1; b=2");
  });

  it("answers undefined for a header not sent", () => {
    expect(requestHeader({ headers: null, multiValueHeaders: null }, "cookie")).toBeUndefined();
    expect(
      requestHeader({ headers: { Host: "h" }, multiValueHeaders: { Host: ["h"] } }, "cookie"),
    ).toBeUndefined();
  });
});
