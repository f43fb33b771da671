/**
 * Secrets of the accounts never leak (issue 21), over real HTTP against the local stack: sign-up,
 * verification, sign-in (a wrong password too), a request with the session cookie, forgot and
 * reset password, the MCP consent page's sign-in and its OAuth tokens, and a raw API token in use.
 * Every line the in-process handlers write (at debug level) is captured; none may hold a password,
 * a code, the session cookie's secret, a raw token or an OAuth code or token, and no answer after
 * a secret's creation holds it either.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueToken } from "#lib/domain/tokens.ts";
import { verificationCodeOf } from "../support/accounts.ts";
import { sentEmails } from "../support/emulator.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const REDIRECT_URI = "http://127.0.0.1:33420/callback";
let stack: TestStack;
const logLines: string[] = [];
const realStdout = process.stdout.write.bind(process.stdout);
const realStderr = process.stderr.write.bind(process.stderr);
const savedLevel = process.env.LOG_LEVEL;

beforeAll(async () => {
  process.env.LOG_LEVEL = "debug";
  const capture = (chunk: unknown) => {
    logLines.push(String(chunk));
    return true;
  };
  process.stdout.write = capture as typeof process.stdout.write;
  process.stderr.write = capture as typeof process.stderr.write;
  stack = await startTestStack();
}, 60_000);

afterAll(async () => {
  process.stdout.write = realStdout;
  process.stderr.write = realStderr;
  if (savedLevel === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = savedLevel;
  await stack?.stop();
});

const postJson = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.baseUrl}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

const postForm = (origin: string, path: string, fields: Record<string, string>) =>
  fetch(`${origin}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

/**
 * Whether `text` holds `secret`: as a whole word for a 6-digit code (a timestamp's or an id's
 * digits may contain any six in a row), anywhere for every other secret.
 */
const holds = (text: string, secret: string) =>
  /^\d{6}$/.test(secret)
    ? new RegExp(`(?<![A-Za-z0-9])${secret}(?![A-Za-z0-9])`).test(text)
    : text.includes(secret);

async function resetCodeOf(email: string): Promise<string> {
  const messages = (await sentEmails(email)).filter((m) => m.subject === "Reset your password");
  const code = /code is (?:<[^>]*>)?(\d{6})/.exec(messages.at(-1)?.body ?? "")?.[1];
  if (!code) throw new Error(`no reset code e-mailed to ${email}`);
  return code;
}

describe("the accounts' secrets", () => {
  it("appear in no log line and in no answer after their creation", async () => {
    const secrets: Record<string, string> = {};
    const email = `secrets-${randomBytes(6).toString("hex")}@accounts.example.test`;
    secrets.password = `first-${randomBytes(12).toString("hex")}`;
    secrets.newPassword = `second-${randomBytes(12).toString("hex")}`;
    secrets.wrongPassword = `wrong-${randomBytes(12).toString("hex")}`;
    const answers: string[] = [];
    const keep = async (response: Response) => {
      answers.push(await response.clone().text());
      for (const [name, value] of response.headers)
        if (name !== "set-cookie") answers.push(`${name}: ${value}`);
      return response;
    };

    const signedUp = await keep(
      await postJson("/auth/sign-up", {
        email,
        password: secrets.password,
        firstName: "S",
        lastName: "Ecret",
      }),
    );
    expect(signedUp.status, await signedUp.clone().text()).toBeLessThan(300);
    secrets.verifyCode = await verificationCodeOf(email);
    expect(
      (await keep(await postJson("/auth/verify-email", { email, code: secrets.verifyCode }))).status,
    ).toBe(200);

    expect(
      (await keep(await postJson("/auth/sign-in", { email, password: secrets.wrongPassword }))).status,
    ).toBe(401);
    const signedIn = await keep(await postJson("/auth/sign-in", { email, password: secrets.password }));
    expect(signedIn.status).toBe(200);
    const setCookie = signedIn.headers.get("set-cookie") ?? "";
    const cookie = /^((?:__Host-)?session)=([^;]+)/.exec(setCookie);
    expect(cookie?.[2]).toMatch(/\.[A-Za-z0-9_-]{43}$/);
    secrets.sessionSecret = (cookie?.[2] ?? "").split(".")[1] ?? "";
    const cookieHeader = `${cookie?.[1]}=${cookie?.[2]}`;
    const session = await keep(
      await fetch(`${stack.baseUrl}/auth/session`, { headers: { cookie: cookieHeader } }),
    );
    expect(session.status).toBe(200);
    expect(
      (await keep(await fetch(`${stack.baseUrl}/auth/sessions`, { headers: { cookie: cookieHeader } })))
        .status,
    ).toBe(200);

    expect((await keep(await postJson("/auth/forgot-password", { email }))).status).toBeLessThan(300);
    secrets.resetCode = await resetCodeOf(email);
    const reset = await keep(
      await postJson("/auth/reset-password", {
        email,
        code: secrets.resetCode,
        password: secrets.newPassword,
      }),
    );
    expect(reset.status, await reset.clone().text()).toBe(200);
    // The session was signed out by the reset.
    expect(
      (await keep(await fetch(`${stack.baseUrl}/auth/session`, { headers: { cookie: cookieHeader } })))
        .status,
    ).toBe(401);

    // The MCP consent page: sign in with the new password, then the OAuth code and tokens.
    const origin = new URL(stack.mcpUrl).origin;
    const registered = (await (
      await fetch(`${origin}/oauth/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Secrets agent" }),
      })
    ).json()) as Record<string, string>;
    secrets.codeVerifier = randomBytes(32).toString("base64url");
    const params = {
      response_type: "code",
      client_id: registered.client_id ?? "",
      redirect_uri: REDIRECT_URI,
      code_challenge: createHash("sha256").update(secrets.codeVerifier).digest("base64url"),
      code_challenge_method: "S256",
      state: "secrets",
      resource: stack.mcpUrl,
    };
    const refused = await keep(
      await postForm(origin, "/oauth/authorize", {
        ...params,
        email,
        password: secrets.wrongPassword,
        consent: "approve",
      }),
    );
    expect(refused.status).toBe(401);
    const approved = await postForm(origin, "/oauth/authorize", {
      ...params,
      email,
      password: secrets.newPassword,
      consent: "approve",
    });
    expect(approved.status).toBe(303);
    secrets.oauthCode = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? "";
    const tokens = (await (
      await postForm(origin, "/oauth/token", {
        grant_type: "authorization_code",
        code: secrets.oauthCode,
        code_verifier: secrets.codeVerifier,
        redirect_uri: REDIRECT_URI,
        client_id: params.client_id,
      })
    ).json()) as Record<string, string>;
    secrets.accessToken = tokens.access_token ?? "";
    secrets.refreshToken = tokens.refresh_token ?? "";
    expect(secrets.accessToken).not.toBe("");
    const toolsList = await fetch(stack.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${secrets.accessToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(toolsList.status).toBe(200);
    const toolNames = JSON.stringify(await toolsList.text());
    for (const name of ["sign_in", "sign_up", "reset_password", "list_sessions", "create_user_token"])
      expect(toolNames).not.toContain(`"${name}"`);

    // A raw API token in use on the Core API (its answers list tokens by preview only).
    const userId = /"userId":"([^"]+)"/.exec(answers.join("\n"))?.[1];
    expect(userId).toBeDefined();
    secrets.apiToken = (await issueToken(userId ?? "")).token;
    const listed = await keep(
      await fetch(`${stack.baseUrl}/api/users/${userId}/tokens`, {
        headers: { authorization: secrets.apiToken },
      }),
    );
    expect(listed.status).toBe(200);
    expect(await listed.clone().text()).toContain("MCP: Secrets agent");

    // Something was logged (the capture works), and no line holds any secret.
    const logged = logLines.join("");
    expect(logLines.length).toBeGreaterThan(0);
    expect(logged).toContain("API token issued");
    for (const [name, value] of Object.entries(secrets)) {
      expect(value.length, name).toBeGreaterThanOrEqual(6);
      expect(holds(logged, value), `${name} in a log line`).toBe(false);
    }
    // No answer after a secret's creation holds it (the cookie only in its Set-Cookie; the codes
    // only in the e-mails; the raw token only where it was issued).
    const answered = answers.join("\n");
    for (const name of [
      "password",
      "newPassword",
      "wrongPassword",
      "verifyCode",
      "resetCode",
      "sessionSecret",
      "apiToken",
    ])
      expect(holds(answered, secrets[name] ?? "<none>"), `${name} in an answer`).toBe(false);
  });
});
