/** The MCP endpoint's 401 message (lib/mcp/auth.ts unauthorizedMessage): it says how to send a credential. */
import { describe, expect, it } from "vitest";
import { unauthorizedMessage } from "#lib/mcp/auth.ts";

describe("unauthorizedMessage", () => {
  it("names the Bearer prefix when a user token is sent with it (any case, any spacing)", () => {
    for (const header of ["Bearer u-abc", "bearer   u-abc", " BEARER u-x "])
      expect(unauthorizedMessage(header)).toContain("without the Bearer prefix");
  });
  it("otherwise says what a valid credential is", () => {
    for (const header of [null, "", "u-unknown", "Bearer not.a.jwt", "Basic dTpw"]) {
      const message = unauthorizedMessage(header);
      expect(message).toMatch(/^Unauthorized: missing or invalid token/);
      expect(message).not.toContain("without the Bearer prefix");
    }
  });
});
