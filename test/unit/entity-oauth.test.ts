/** The MCP OAuth entities (client, authorization code, grant): keys, and stored items read as typed fields or refused naming the field. */
import { describe, expect, it } from "vitest";
import { oauthClientItemOf, oauthClientKeys } from "#lib/db/entities/oauth-client.ts";
import { oauthCodeItemOf, oauthCodeKeys } from "#lib/db/entities/oauth-code.ts";
import { oauthGrantItemOf, oauthGrantKeys } from "#lib/db/entities/oauth-grant.ts";

describe("the MCP OAuth entities", () => {
  it("have their own partitions, apart from every other entity's", () => {
    expect(oauthClientKeys.item("mcp-1")).toEqual({ pKey: "OAUTHCLIENT#mcp-1", sKey: "CLIENT" });
    expect(oauthCodeKeys.item("ab12")).toEqual({ pKey: "OAUTHCODE#ab12", sKey: "CODE" });
    expect(oauthGrantKeys.item("g-1")).toEqual({ pKey: "OAUTHGRANT#g-1", sKey: "GRANT" });
  });

  it("read stored items as typed fields", () => {
    const client = {
      ...oauthClientKeys.item("mcp-1"),
      entity: "oauthClient",
      clientId: "mcp-1",
      clientName: "Agent",
      redirectUris: ["http://127.0.0.1:9/cb"],
      createdAt: "2026-01-01T00:00:00.000Z",
      TTL: 1,
    };
    expect(oauthClientItemOf(client)).toEqual(client);
    const code = {
      ...oauthCodeKeys.item("h"),
      entity: "oauthCode",
      clientId: "mcp-1",
      redirectUri: "http://127.0.0.1:9/cb",
      codeChallenge: "c",
      resource: "https://gw.example/mcp",
      userId: "u",
      tokenId: "tok_1",
      createdAt: "2026-01-01T00:00:00.000Z",
      TTL: 1,
    };
    expect(oauthCodeItemOf(code)).toEqual(code);
    expect(oauthCodeItemOf({ ...code, redeemedAt: "t", grantId: "g-1" }).grantId).toBe("g-1");
    const grant = {
      ...oauthGrantKeys.item("g-1"),
      entity: "oauthGrant",
      grantId: "g-1",
      clientId: "mcp-1",
      userId: "u",
      tokenId: "tok_1",
      resource: "https://gw.example/mcp",
      refreshHash: "h",
      createdAt: "t",
      rotatedAt: "t",
      TTL: 1,
    };
    expect(oauthGrantItemOf(grant)).toEqual(grant);
  });

  it("refuse an item that is not theirs, naming the field", () => {
    expect(() => oauthGrantItemOf({ pKey: "OAUTHGRANT#g", sKey: "GRANT", entity: "oauthGrant" })).toThrow(
      /OAuth grant OAUTHGRANT#g\/GRANT does not match its schema: grantId/,
    );
    expect(() =>
      oauthClientItemOf({
        pKey: "p",
        sKey: "s",
        entity: "oauthClient",
        clientId: "c",
        clientName: "n",
        redirectUris: "x",
      }),
    ).toThrow(/redirectUris/);
  });
});
