/** The MCP endpoint's OAuth rules that need no store: PKCE, redirect URIs, registration and its limits, metadata, the JWS signature form, the pages. */
import { generateKeyPairSync, sign, verify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkAuthorizationParams, singleParams } from "#lib/oauth/authorization-server.ts";
import { parseClientRegistration, redirectUriProblem } from "#lib/oauth/client-metadata.ts";
import { consentPage, errorPage, escapeHtml, pageHeaders } from "#lib/oauth/consent-page.ts";
import { OAuthError } from "#lib/oauth/errors.ts";
import {
  authorizationServerMetadata,
  endpointsOf,
  issuerOfResource,
  protectedResourceMetadata,
} from "#lib/oauth/metadata.ts";
import { isCodeVerifier, s256Challenge, verifierMatches } from "#lib/oauth/pkce.ts";
import {
  PENDING_BUCKET_MS,
  PENDING_CLIENT_TTL_SECONDS,
  PENDING_HOURS,
  pendingBucketExpiry,
  pendingBucketsAt,
  pendingRetryAfterSeconds,
  pendingRoom,
  registrationLimitsOf,
  registrationSourceOf,
} from "#lib/oauth/registration-limits.ts";
import { derToJoseSignature } from "#lib/oauth/signing.ts";

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    if (error instanceof OAuthError) return { code: error.code, message: error.message };
    throw error;
  }
  return undefined;
};

describe("PKCE S256", () => {
  // RFC 7636 appendix B.
  const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

  it("computes the RFC 7636 example challenge", () => {
    expect(s256Challenge(verifier)).toBe(challenge);
  });

  it("accepts the matching verifier and refuses any other", () => {
    expect(verifierMatches(verifier, challenge)).toBe(true);
    expect(verifierMatches(`${verifier.slice(0, -1)}j`, challenge)).toBe(false);
    expect(verifierMatches(verifier, s256Challenge("x".repeat(43)))).toBe(false);
  });

  it("refuses verifiers of the wrong length or alphabet, even when they hash right", () => {
    expect(isCodeVerifier("a".repeat(42))).toBe(false);
    expect(isCodeVerifier("a".repeat(43))).toBe(true);
    expect(isCodeVerifier("a".repeat(128))).toBe(true);
    expect(isCodeVerifier("a".repeat(129))).toBe(false);
    const withSpace = `${"a".repeat(42)} `;
    expect(verifierMatches(withSpace, s256Challenge(withSpace))).toBe(false);
  });
});

describe("redirect URIs", () => {
  it.each([
    "https://client.example/callback",
    "https://client.example:8443/cb?x=1",
    "http://localhost:33418/callback",
    "http://127.0.0.1:6274/oauth/callback",
    "http://[::1]:8080/cb",
  ])("allows %s", (uri) => {
    expect(redirectUriProblem(uri)).toBeUndefined();
  });

  it.each([
    ["http://client.example/cb", /https/],
    ["http://127.0.0.2.nip.io/cb", /https/],
    ["https://client.example/cb#frag", /fragment/],
    ["https://user:pw@client.example/cb", /user information/],
    ["javascript:alert(1)", /https/],
    ["custom-app://callback", /https/],
    ["/relative", /absolute/],
    ["", /non-empty/],
    [`https://client.example/${"a".repeat(2000)}`, /at most/],
    [42, /string/],
  ])("refuses %s", (uri, problem) => {
    expect(redirectUriProblem(uri)).toMatch(problem);
  });
});

describe("client registration", () => {
  it("registers a public client with its redirect URIs and name", () => {
    expect(
      parseClientRegistration({
        redirect_uris: ["http://127.0.0.1:9/cb", "http://127.0.0.1:9/cb"],
        client_name: " Agent ",
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        logo_uri: "ignored",
      }),
    ).toEqual({ clientName: "Agent", redirectUris: ["http://127.0.0.1:9/cb"] });
  });

  it.each([
    [{}, "invalid_redirect_uri", /redirect_uris/],
    [{ redirect_uris: [] }, "invalid_redirect_uri", /redirect_uris/],
    [{ redirect_uris: ["http://evil.example/cb"] }, "invalid_redirect_uri", /redirect_uris\[0\]/],
    [{ redirect_uris: Array(11).fill("https://a.example/cb") }, "invalid_redirect_uri", /at most 10/],
    [
      { redirect_uris: ["https://a.example/cb"], token_endpoint_auth_method: "client_secret_basic" },
      "invalid_client_metadata",
      /token_endpoint_auth_method/,
    ],
    [
      { redirect_uris: ["https://a.example/cb"], grant_types: ["client_credentials"] },
      "invalid_client_metadata",
      /grant_types/,
    ],
    [
      { redirect_uris: ["https://a.example/cb"], response_types: ["token"] },
      "invalid_client_metadata",
      /response_types/,
    ],
    [
      { redirect_uris: ["https://a.example/cb"], client_name: "n".repeat(201) },
      "invalid_client_metadata",
      /client_name/,
    ],
    [[], "invalid_client_metadata", /object/],
  ])("refuses %j with %s", (body, code, message) => {
    const error = codeOf(() => parseClientRegistration(body));
    expect(error?.code).toBe(code);
    expect(error?.message).toMatch(message);
  });
});

describe("discovery documents", () => {
  const { issuer, resource } = endpointsOf("https://abc.lambda-url.us-east-1.on.aws/.well-known/x?y=1");

  it("derive the issuer and the MCP resource from the request's origin", () => {
    expect(issuer).toBe("https://abc.lambda-url.us-east-1.on.aws");
    expect(resource).toBe("https://abc.lambda-url.us-east-1.on.aws/mcp");
    expect(issuerOfResource(resource)).toBe(issuer);
  });

  it("describe the protected resource (RFC 9728)", () => {
    expect(protectedResourceMetadata(issuer)).toMatchObject({
      resource,
      authorization_servers: [issuer],
      bearer_methods_supported: ["header"],
    });
  });

  it("describe the authorization server (RFC 8414)", () => {
    const metadata = authorizationServerMetadata(issuer);
    expect(metadata).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
    });
    expect(metadata.response_types_supported).toContain("code");
    expect(metadata.grant_types_supported).toEqual(
      expect.arrayContaining(["authorization_code", "refresh_token"]),
    );
  });
});

describe("authorization request parameters", () => {
  const resource = "https://gw.example/mcp";
  const challenge = s256Challenge("v".repeat(43));
  const base = {
    response_type: "code",
    client_id: "c",
    redirect_uri: "https://a.example/cb",
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st",
  };
  const check = (params: Record<string, string>) =>
    checkAuthorizationParams(singleParams(new URLSearchParams(params)), resource);

  it("accepts a complete request, with or without the resource", () => {
    expect(check(base)).toEqual({ codeChallenge: challenge, state: "st", resource, scope: undefined });
    expect(check({ ...base, resource, scope: "mcp" }).scope).toBe("mcp");
  });

  it.each([
    [{ response_type: "token" }, "unsupported_response_type"],
    [{ code_challenge: "" }, "invalid_request"],
    [{ code_challenge_method: "plain" }, "invalid_request"],
    [{ code_challenge: "short" }, "invalid_request"],
    [{ resource: "https://other.example/mcp" }, "invalid_target"],
    [{ state: "s".repeat(1025) }, "invalid_request"],
  ])("refuses %j with %s", (change, code) => {
    expect(codeOf(() => check({ ...base, ...change }))?.code).toBe(code);
  });

  it("refuses a parameter given twice, naming it", () => {
    const error = codeOf(() => singleParams(new URLSearchParams("state=a&state=b")));
    expect(error).toEqual({ code: "invalid_request", message: "state: given more than once" });
  });
});

describe("ES256 signature form", () => {
  it("turns a DER ECDSA signature into r||s that verifies as IEEE P1363", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    for (let i = 0; i < 50; i++) {
      const message = Buffer.from(`message ${i}`);
      const der = sign("sha256", message, { key: privateKey, dsaEncoding: "der" });
      const jose = derToJoseSignature(der);
      expect(jose).toHaveLength(64);
      expect(verify("sha256", message, { key: publicKey, dsaEncoding: "ieee-p1363" }, jose)).toBe(true);
    }
  });

  it("refuses what is not a DER signature", () => {
    expect(() => derToJoseSignature(Buffer.from([0x30, 0x02, 0x02, 0x00]))).toThrow(/DER/);
    expect(() => derToJoseSignature(Buffer.alloc(64, 1))).toThrow(/DER/);
  });
});

describe("the consent page", () => {
  const params = new Map([
    ["client_id", 'c"><script>'],
    ["redirect_uri", "https://a.example/cb"],
    ["state", "<b>"],
    ["password", "never-echoed"],
  ]);
  const request: Parameters<typeof consentPage>[0] = {
    client: {
      pKey: "p",
      sKey: "s",
      entity: "oauthClient",
      clientId: 'c"><script>',
      clientName: "<img src=x onerror=alert(1)>",
      redirectUris: ["https://a.example/cb"],
      createdAt: "",
      TTL: 0,
    },
    redirectUri: "https://a.example/cb",
    codeChallenge: "x",
    resource: "https://gw.example/mcp",
    state: "<b>",
  };
  const html = consentPage(request, params, { authorizeUrl: "https://gw.example/oauth/authorize" });

  it("escapes every value and posts the request's parameters back, never the password", () => {
    expect(escapeHtml(`<a href="x">'&`)).toBe("&lt;a href=&quot;x&quot;&gt;&#39;&amp;");
    expect(html).not.toMatch(/<script>|<img|<b>/);
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(html).toContain('name="state" value="&lt;b&gt;"');
    expect(html).not.toContain("never-echoed");
    expect(html).toContain('name="consent" value="approve"');
    expect(html).toContain("https://gw.example/mcp");
    expect(html).toContain('<label for="email">Email</label>');
    expect(html).toContain('autocomplete="username"');
    expect(html).toContain('<label for="password">Password</label>');
    expect(html).toContain('autocomplete="current-password"');
    expect(html).not.toContain('name="token"');
  });

  it("puts an error next to its field, escaped, and keeps the address but not the password", () => {
    const page = consentPage(request, params, {
      authorizeUrl: "https://gw.example/oauth/authorize",
      email: '"><i>a@b.example',
      error: { message: "Invalid <email> or password", field: "password" },
    });
    expect(page).toContain('value="&quot;&gt;&lt;i&gt;a@b.example"');
    expect(page).toMatch(
      /id="password"[^>]*aria-describedby="password-error">\s*<p id="password-error" class="field-error" role="alert">Invalid &lt;email&gt; or password<\/p>/,
    );
    expect(page).not.toContain("never-echoed");
  });

  it("shows the session's user and no password field when signed in", () => {
    const page = consentPage(request, params, {
      authorizeUrl: "https://gw.example/oauth/authorize",
      signedInAs: "<ada>@example.test",
    });
    expect(page).toContain("Signed in as <strong>&lt;ada&gt;@example.test</strong>");
    expect(page).not.toContain('name="password"');
    expect(page).not.toContain('name="email"');
  });

  it("is served with a CSP that allows the form to post here and redirect to the client only", () => {
    const headers = pageHeaders("https://a.example");
    expect(headers["Content-Security-Policy"]).toContain("default-src 'none'");
    expect(headers["Content-Security-Policy"]).toContain("form-action 'self' https://a.example;");
    expect(headers["Content-Security-Policy"]).toContain("frame-ancestors 'none'");
    expect(headers["Cache-Control"]).toBe("no-store");
  });
});

describe("registration limits", () => {
  it("count an IPv4 caller by its address, an IPv6 caller by its /64, anything else as unknown", () => {
    expect(registrationSourceOf("203.0.113.7")).toBe("203.0.113.7");
    expect(registrationSourceOf("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(registrationSourceOf("::ffff:cb00:7107")).toBe("203.0.113.7");
    expect(registrationSourceOf("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(registrationSourceOf("2001:0db8:0001:0002:ffff:1:2:3")).toBe("2001:db8:1:2::/64");
    expect(registrationSourceOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(registrationSourceOf("2001:db8:0:0:1::")).toBe("2001:db8:0:0::/64");
    expect(registrationSourceOf("2001:db8:0:1::1")).not.toBe(registrationSourceOf("2001:db8::1"));
    expect(registrationSourceOf("::1")).toBe("0:0:0:0::/64");
    expect(registrationSourceOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(registrationSourceOf(undefined)).toBe("unknown");
    expect(registrationSourceOf("not an address")).toBe("unknown");
  });

  it("read their figures from the environment: 10 a minute and 1,000 pending by default, a bad value refused by name", () => {
    expect(registrationLimitsOf({})).toEqual({ perMinute: 10, pendingMax: 1000 });
    expect(
      registrationLimitsOf({ OAUTH_REGISTRATIONS_PER_MINUTE: " 3 ", OAUTH_PENDING_CLIENTS_MAX: "50" }),
    ).toEqual({ perMinute: 3, pendingMax: 50 });
    for (const bad of ["0", "-1", "2.5", "ten", "1001"])
      expect(() => registrationLimitsOf({ OAUTH_REGISTRATIONS_PER_MINUTE: bad })).toThrow(
        /OAUTH_REGISTRATIONS_PER_MINUTE: must be a whole number from 1 to 1000/,
      );
    expect(() => registrationLimitsOf({ OAUTH_PENDING_CLIENTS_MAX: "0" })).toThrow(
      /OAUTH_PENDING_CLIENTS_MAX/,
    );
  });

  it("count pending clients per hour: the current hour and the 24 before it are alive", () => {
    const now = Date.UTC(2026, 10, 26, 16, 20, 5);
    const { current, earlier } = pendingBucketsAt(now);
    expect(current).toBe(Date.UTC(2026, 10, 26, 16));
    expect(PENDING_HOURS).toBe(24);
    expect(earlier).toHaveLength(24);
    expect(earlier[0]).toBe(current - PENDING_BUCKET_MS);
    expect(earlier.at(-1)).toBe(Date.UTC(2026, 10, 25, 16));
    // A bucket lives until its last client's day is over: its end plus 24 hours.
    expect(pendingBucketExpiry(current)).toBe(Date.UTC(2026, 10, 27, 17) / 1000);
    const oldest = earlier.at(-1) as number;
    expect(pendingBucketExpiry(oldest) * 1000).toBeGreaterThan(now);
    expect(pendingBucketExpiry(oldest - PENDING_BUCKET_MS) * 1000).toBeLessThanOrEqual(now);
    expect(PENDING_CLIENT_TTL_SECONDS).toBe(86_400);
  });

  it("leave room for the cap minus the earlier hours' pending clients, and say when a place frees up", () => {
    expect(pendingRoom(1000, [])).toBe(1000);
    expect(pendingRoom(1000, [400, 0, 599])).toBe(1);
    expect(pendingRoom(1000, [700, 400])).toBe(-100);
    expect(pendingRoom(10, [-2, 3])).toBe(7);
    const now = Date.UTC(2026, 10, 26, 16, 20, 0);
    const { current, earlier } = pendingBucketsAt(now);
    const oldestHolding = earlier[5] as number;
    const counts = new Map([
      [earlier[0] as number, 3],
      [oldestHolding, 2],
      [earlier[10] as number, 0],
    ]);
    expect(pendingRetryAfterSeconds(now, counts)).toBe(pendingBucketExpiry(oldestHolding) - now / 1000);
    // Only the current hour holds: its clients' day is over 24 h 40 min from now.
    expect(pendingRetryAfterSeconds(now, new Map())).toBe(pendingBucketExpiry(current) - now / 1000);
    expect(pendingRetryAfterSeconds(now, new Map())).toBe(24 * 3600 + 40 * 60);
  });
});

describe("the error page", () => {
  it("names the error code and the parameter, escaped, and offers no way back to the client", () => {
    const html = errorPage("invalid_request", 'state: at most 1024 characters <script>"');
    expect(html).toContain("invalid_request: state: at most 1024 characters &lt;script&gt;&quot;");
    expect(html).not.toContain("<script>");
    expect(html).not.toMatch(/<a |<form|http/i);
  });
});
