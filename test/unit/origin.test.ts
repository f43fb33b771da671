/** The service's own origin (lib/http/origin.ts): the CSRF rule of cookie-authenticated requests. */
import { describe, expect, it } from "vitest";
import { getConfig } from "#lib/config.ts";
import { isOwnOrigin, SAFE_METHODS } from "#lib/http/origin.ts";

const API = "https://abc123.execute-api.us-east-1.amazonaws.com/v1";
const appOrigin = () => new URL(getConfig().appUrl).origin;

describe("isOwnOrigin", () => {
  it("accepts the web application's origin and the API's own origin", () => {
    expect(isOwnOrigin(appOrigin(), API)).toBe(true);
    expect(isOwnOrigin("https://abc123.execute-api.us-east-1.amazonaws.com", API)).toBe(true);
    expect(isOwnOrigin("http://127.0.0.1:3000", "http://127.0.0.1:3000")).toBe(true);
  });

  it("compares scheme, host and port (case-insensitively for the host)", () => {
    expect(isOwnOrigin("HTTPS://ABC123.execute-api.us-east-1.amazonaws.com", API)).toBe(true);
    expect(isOwnOrigin("http://abc123.execute-api.us-east-1.amazonaws.com", API)).toBe(false);
    expect(isOwnOrigin("https://abc123.execute-api.us-east-1.amazonaws.com:8443", API)).toBe(false);
    expect(isOwnOrigin("http://127.0.0.1:3001", "http://127.0.0.1:3000")).toBe(false);
  });

  it("refuses a foreign, missing, null or malformed origin", () => {
    for (const origin of [
      "https://evil.example",
      "https://abc123.execute-api.us-east-1.amazonaws.com.evil.example",
      undefined,
      "",
      "null",
      "not a url",
      "file:///etc/passwd",
    ])
      expect(isOwnOrigin(origin, API), String(origin)).toBe(false);
  });

  it("treats GET, HEAD and OPTIONS as safe, nothing else", () => {
    expect([...SAFE_METHODS].sort()).toEqual(["GET", "HEAD", "OPTIONS"]);
  });
});
