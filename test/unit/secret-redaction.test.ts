/**
 * The secret redactor (issue 7): which values of each auth type's secret are secret, every form a
 * secret is searched for (plain, percent-encoded, JSON-escaped, base64 whole and embedded, Basic,
 * Latin-1), strings, buffers and nested values, cuts at a cap, against a naive reference, and the
 * cost on a 32 KB body.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  MAX_PATTERN_BYTES,
  MIN_SECRET_LENGTH,
  NO_REDACTION,
  REDACTED,
  redactedPrefix,
  secretForms,
  secretRedactor,
  secretValues,
} from "#lib/vault/secret-redaction.ts";
import { parseCredentialSecret } from "#lib/vault/secret-schemas.ts";

const token = (label: string) => `${label}-${randomUUID()}`;
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const b64url = (text: string) => Buffer.from(text, "utf8").toString("base64url");

describe("secretValues: the secret strings of each auth type", () => {
  const values = (credentialType: "proxy" | "target", authType: string, secret: unknown) =>
    secretValues(authType, parseCredentialSecret(credentialType, authType, secret)).sort();
  const additions = {
    additionalHeaders: { "X-Extra": "extra-header-value" },
    additionalQueryParams: { extra: "extra-query-value" },
  };

  it("apiKey: the key and the additions, not the key name, placement or prefix", () => {
    expect(
      values("target", "apiKey", { keyName: "X-Key", keyValue: "key-value", prefix: "Key", ...additions }),
    ).toEqual(["extra-header-value", "extra-query-value", "key-value"]);
  });

  it("bearer and jwt: the token, not the prefix", () => {
    expect(values("target", "bearer", { token: "bearer-token" })).toEqual(["bearer-token"]);
    const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln";
    expect(values("target", "jwt", { token: jwt, prefix: "JWT" })).toEqual([jwt]);
  });

  it("basicAuth: the password and username:password, not the user name alone", () => {
    expect(values("target", "basicAuth", { username: "svc-user", password: "pass-word" })).toEqual([
      "pass-word",
      "svc-user:pass-word",
    ]);
  });

  it("oauth2: the client secret and the stored tokens, not the client id, URLs, scope or flow", () => {
    const secret = {
      ...parseCredentialSecret("target", "oauth2", {
        flow: "authorization_code",
        tokenUrl: "https://auth.example.test/token",
        authorizationUrl: "https://auth.example.test/authorize",
        clientId: "public-client-id",
        clientSecret: "client-secret-value",
        scope: "api:read",
        audience: "https://api.example.test",
        extraTokenParams: { resource: "https://api.example.test" },
      }),
      redirectUri: "https://gateway.example.test/webhooks/oauth2",
      pkceVerifier: "pkce-verifier-value",
      accessToken: "access-token-value",
      refreshToken: "refresh-token-value",
      expiresAt: 1_700_000_000_000,
    };
    expect(secretValues("oauth2", secret).sort()).toEqual([
      "access-token-value",
      "client-secret-value",
      "pkce-verifier-value",
      "refresh-token-value",
    ]);
  });

  it("customToken: the token request's headers, query and body values and the additional data", () => {
    expect(
      values("target", "customToken", {
        tokenUrl: "https://auth.example.test/token",
        requestHeaders: { "X-Login": "login-header-value" },
        requestQueryParams: { login: "login-query-value" },
        requestBody: { user: "body-user", nested: { password: "body-password" }, count: 12345 },
        tokenPath: "data.token",
        expiryMethod: "expires_in",
        expiryPath: "data.expires",
        keyName: "X-Token",
        additionalData: { tenant: "tenant-value" },
      }),
    ).toEqual(["body-password", "body-user", "login-header-value", "login-query-value", "tenant-value"]);
  });

  it("custom: header, query and data values (nested, in arrays), not the names", () => {
    expect(
      values("target", "custom", {
        ...additions,
        data: { clientRef: "data-value", list: ["first-item", { deep: "deep-value" }], flag: true },
      }),
    ).toEqual(["data-value", "deep-value", "extra-header-value", "extra-query-value", "first-item"]);
  });

  it("none: only the additions", () => {
    expect(values("target", "none", additions)).toEqual(["extra-header-value", "extra-query-value"]);
  });

  it("jwtVerify: the shared secret, not issuer, audience, subject or claims", () => {
    const sharedSecret = "s".repeat(40);
    expect(
      values("proxy", "jwtVerify", {
        algorithms: ["HS256"],
        issuer: "https://issuer.example.test",
        audience: "gateway",
        subject: "svc-*",
        sharedSecret,
        requiredClaims: { role: "admin-role" },
      }),
    ).toEqual([sharedSecret]);
  });
});

describe("forms of a secret", () => {
  it("finds the plaintext anywhere, as often as it appears", () => {
    const secret = token("plain");
    const redactor = secretRedactor([secret]);
    expect(redactor.text(`a ${secret} b ${secret}${secret} c`)).toBe(`a ${REDACTED} b ${REDACTED} c`);
    expect(redactor.text("nothing here")).toBe("nothing here");
  });

  it("ignores values shorter than MIN_SECRET_LENGTH, and null or undefined", () => {
    expect(MIN_SECRET_LENGTH).toBe(4);
    const redactor = secretRedactor(["abc", "", undefined, null]);
    expect(redactor).toBe(NO_REDACTION);
    expect(redactor.text("abc abc")).toBe("abc abc");
    expect(secretRedactor(["abcd"]).text("xabcdx abc")).toBe(`x${REDACTED}x abc`);
  });

  it("finds percent-encoded forms: encodeURIComponent, form encoding, lower-case hex", () => {
    const secret = "p@ss w/rd+x&y=z~é";
    const redactor = secretRedactor([secret]);
    const forms = [
      encodeURIComponent(secret),
      new URLSearchParams({ k: secret }).toString().slice(2),
      encodeURIComponent(secret).toLowerCase(),
    ];
    for (const form of forms) {
      expect(form).not.toBe(secret);
      expect(redactor.text(`https://echo.test/?k=${form}&n=1`), form).toBe(
        `https://echo.test/?k=${REDACTED}&n=1`,
      );
    }
  });

  it("finds JSON-escaped forms: standard, with \\/ and with \\u escapes for non-ASCII", () => {
    const secret = 'quo"te\\back/slash-é';
    const redactor = secretRedactor([secret]);
    const standard = JSON.stringify({ v: secret });
    const slashes = standard.replaceAll("/", "\\/");
    const ascii = standard.replace("é", "\\u00e9");
    for (const text of [standard, slashes, ascii, ascii.replace("\\u00e9", "\\u00E9")]) {
      expect(redactor.text(text), text).toBe(`{"v":"${REDACTED}"}`);
    }
  });

  it("finds base64 and base64url, whole", () => {
    const secret = `${token("b64")}?>~`;
    const redactor = secretRedactor([secret]);
    expect(redactor.text(`x ${b64(secret)} y`)).toBe(`x ${REDACTED} y`);
    expect(redactor.text(`x ${b64url(secret)} y`)).toBe(`x ${REDACTED} y`);
  });

  it("finds a secret inside any base64 text at each alignment (a Basic header, an encoded document)", () => {
    const secret = token("embedded");
    const redactor = secretRedactor([secret]);
    for (const before of ["", "a", "ab", "abc", '{"k":"']) {
      for (const after of ["", "z", "zz", '"}']) {
        for (const encode of [b64, b64url]) {
          const encoded = encode(`${before}${secret}${after}`);
          const shown = redactor.text(encoded);
          expect(shown, `${before}|${after}`).toContain(REDACTED);
          // What is left decodes to at most 2 bytes of the secret on each side.
          const left = shown.split(REDACTED);
          expect(left.join("").length).toBeLessThanOrEqual(encode(`${before}${after}`).length + 6);
        }
      }
    }
  });

  it("finds the Basic form of username:password", () => {
    const secret = { username: "svc-user", password: token("pw") };
    const redactor = secretRedactor(secretValues("basicAuth", secret));
    const header = `Basic ${b64(`${secret.username}:${secret.password}`)}`;
    expect(redactor.text(JSON.stringify({ headers: { Authorization: header } }))).toBe(
      `{"headers":{"Authorization":"Basic ${REDACTED}"}}`,
    );
  });

  it("finds a Latin-1 secret as UTF-8 and as single bytes (how Node sends it in a header)", () => {
    const secret = "pässwörd-1234";
    const redactor = secretRedactor([secret]);
    const latin1 = Buffer.concat([Buffer.from("x: "), Buffer.from(secret, "latin1"), Buffer.from(";")]);
    expect(redactor.bytes(latin1).toString("latin1")).toBe(`x: ${REDACTED};`);
    expect(redactor.text(`x: ${secret};`)).toBe(`x: ${REDACTED};`);
  });

  it("lists each form once", () => {
    const forms = secretForms("plain-token-value").map(String);
    expect(new Set(forms).size).toBe(forms.length);
    expect(forms).toContain("plain-token-value");
    expect(secretForms("abc")).toEqual([]);
  });

  it("replaces overlapping and nested secrets by one marker", () => {
    const redactor = secretRedactor(["abcdefgh", "efghijkl", "cdef"]);
    expect(redactor.text("0abcdefghijkl1")).toBe(`0${REDACTED}1`);
    expect(redactor.text("0cdef1")).toBe(`0${REDACTED}1`);
  });
});

describe("strings, buffers and nested values", () => {
  const secret = token("nested");
  const redactor = secretRedactor([secret]);

  it("redacts strings, keys and buffers of a nested value without changing the input", () => {
    const input = {
      headers: { authorization: `Bearer ${secret}`, [secret]: "as a key" },
      list: [secret, 42, true, null, { deep: [`x${secret}`] }],
      raw: Buffer.from(`bytes ${secret}`),
      date: new Date(0),
    };
    const before = JSON.stringify(input);
    const out = redactor.value(input);
    expect(out).toEqual({
      headers: { authorization: `Bearer ${REDACTED}`, [REDACTED]: "as a key" },
      list: [REDACTED, 42, true, null, { deep: [`x${REDACTED}`] }],
      raw: Buffer.from(`bytes ${REDACTED}`),
      date: new Date(0),
    });
    expect(JSON.stringify(input)).toBe(before);
    expect(JSON.stringify(out)).not.toContain(secret);
  });

  it("keeps a __proto__ or constructor key as data", () => {
    const input = JSON.parse(`{"__proto__":"${secret}","constructor":"${secret}"}`);
    const out = redactor.value(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.entries(out)).toEqual([
      ["__proto__", REDACTED],
      ["constructor", REDACTED],
    ]);
  });

  it("returns a string without any secret unchanged (the same string)", () => {
    const text = "a".repeat(1000);
    expect(redactor.text(text)).toBe(text);
  });

  it("redacts binary bytes around the secret and keeps the rest byte for byte", () => {
    const noise = randomBytes(64);
    const bytes = Buffer.concat([noise, Buffer.from(secret), noise]);
    expect(redactor.bytes(bytes)).toEqual(Buffer.concat([noise, Buffer.from(REDACTED), noise]));
  });
});

describe("a cap applied after redaction", () => {
  const secret = token("capped");
  const redactor = secretRedactor([secret]);

  it("replaces a secret crossing the cap whole, and shows no part of it", () => {
    for (let before = 90; before <= 100; before++) {
      const body = Buffer.from(`${"x".repeat(before)}${secret}${"y".repeat(200)}`);
      const { bytes, truncated } = redactedPrefix(redactor, body, 100);
      expect(truncated).toBe(true);
      expect(bytes.length).toBeLessThanOrEqual(100);
      const text = bytes.toString();
      for (let length = 4; length <= secret.length; length++) {
        expect(text, `cut after ${before}`).not.toContain(secret.slice(0, length));
      }
    }
  });

  it("does not let short markers pull in a partial secret from beyond the cap", () => {
    // Long secrets replaced by a short marker: the kept part must still end at the cap, in the
    // input's offsets, never after it.
    const long = "L".repeat(60);
    const other = token("after");
    const both = secretRedactor([long, other]);
    const cap = 150;
    const body = Buffer.from(`${long}${long}${"z".repeat(30)}${other}`);
    expect(body.indexOf(other)).toBe(cap);
    const shown = redactedPrefix(both, body, cap).bytes.toString();
    expect(shown).toBe(`${REDACTED}${"z".repeat(30)}`);
    expect(shown).not.toContain(other.slice(0, 4));
  });

  it("redacts the beginning of a secret at the very end of an input that is itself cut", () => {
    const cut = Buffer.from(`hello ${secret.slice(0, 10)}`);
    expect(redactor.bytes(cut, { truncatedInput: true }).toString()).toBe(`hello ${REDACTED}`);
    expect(redactor.bytes(cut).toString()).toBe(cut.toString());
  });

  it("cuts UTF-8 on a character boundary, before and after redaction", () => {
    const body = Buffer.from(`${"€".repeat(40)}${secret}`);
    const { bytes } = redactedPrefix(redactor, body, 100, { utf8: true });
    expect(bytes.toString()).toBe("€".repeat(33));
    const marked = redactedPrefix(secretRedactor(["abcd"]), Buffer.from(`abcd${"€".repeat(40)}`), 20, {
      utf8: true,
    });
    expect(marked.bytes.toString()).toBe(`${REDACTED}€€€`);
  });

  it("says truncated only when something was left out", () => {
    expect(redactedPrefix(redactor, Buffer.from(`a ${secret}`), 1000).truncated).toBe(false);
    expect(redactedPrefix(redactor, Buffer.from("short"), 5).truncated).toBe(false);
    expect(redactedPrefix(redactor, Buffer.from("longer"), 5).truncated).toBe(true);
  });
});

describe("against a naive reference", () => {
  /** Replace each maximal run of bytes covered by any occurrence of any secret by the marker. */
  function naive(text: string, secrets: string[]): string {
    const covered = new Array<boolean>(text.length).fill(false);
    for (const secret of secrets) {
      for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) {
        for (let i = at; i < at + secret.length; i++) covered[i] = true;
      }
    }
    let out = "";
    for (let i = 0; i < text.length; i++) {
      if (!covered[i]) out += text[i];
      else if (i === 0 || !covered[i - 1]) out += REDACTED;
    }
    return out;
  }

  it("agrees on random texts and secrets over a two-letter alphabet", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const word = (min: number, max: number) =>
      Array.from({ length: min + Math.floor(random() * (max - min + 1)) }, () =>
        random() < 0.5 ? "a" : "b",
      ).join("");
    for (let round = 0; round < 300; round++) {
      const secrets = Array.from({ length: 1 + Math.floor(random() * 5) }, () => word(4, 9));
      const text = word(0, 80);
      expect(secretRedactor(secrets).text(text), `${secrets.join(",")} in ${text}`).toBe(
        naive(text, secrets),
      );
    }
  });
});

describe("cost", () => {
  it("redacts a 32 KB body against 200 secrets in a few milliseconds", () => {
    const secrets = Array.from({ length: 200 }, (_, i) => token(`secret-${i}`));
    const redactor = secretRedactor(secrets);
    const body = Buffer.from(
      Array.from({ length: 400 }, (_, i) => `line ${i}: ${secrets[i % 200]} and some text`).join("\n"),
    );
    const started = performance.now();
    const { bytes } = redactedPrefix(redactor, body, 32 * 1024, { utf8: true });
    const elapsed = performance.now() - started;
    for (const secret of secrets.slice(0, 20)) expect(bytes.toString()).not.toContain(secret);
    // Generous for a shared CI machine; measured well under 5 ms.
    expect(elapsed).toBeLessThan(100);
  });

  it("caches the redactor of the same secrets", () => {
    const secrets = [token("a"), token("b")];
    expect(secretRedactor(secrets)).toBe(secretRedactor([...secrets].reverse()));
  });

  it("withholds every text when the secrets' forms exceed MAX_PATTERN_BYTES (fails closed)", () => {
    const huge = Array.from({ length: Math.ceil(MAX_PATTERN_BYTES / 4096) }, () =>
      randomBytes(2048).toString("hex"),
    );
    const redactor = secretRedactor(huge);
    expect(redactor.empty).toBe(false);
    expect(redactor.text("anything")).toBe(REDACTED);
    expect(redactor.text("")).toBe("");
    expect(redactedPrefix(redactor, Buffer.from("body"), 100).bytes.toString()).toBe(REDACTED);
  });
});
