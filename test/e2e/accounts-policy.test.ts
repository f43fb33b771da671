/**
 * The accounts policy (issue 21, docs/accounts.md) over real HTTP against the local stack: the
 * sign-up policy (allowed domains, invite-only), the per-IP limit of `/auth/*`, the notification of a
 * sign-in from a new browser, the set-password e-mail of `admin users create`, the HTML part of the
 * e-mails, and APP_URL defaulting to the local Core API's own base URL. Each describe starts its own
 * stack with its own settings (the environment is read by getConfig(), which the runner resets) and
 * puts the environment back afterwards.
 */
import { execFile } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import { findUserIdByEmail } from "#lib/domain/users.ts";
import { TestClock } from "../support/clock.ts";
import { sentEmails } from "../support/emulator.ts";
import { apiClient, createClientFor, startTestStack, storedItem, type TestStack } from "../support/stack.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const PASSWORD = "correct horse battery staple";
const FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const CHROME =
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36";

let counter = 0;
const freshEmail = (label: string, domain = "policy.example.test") =>
  `${label}${++counter}-${Date.now()}@${domain}`;

/** Set environment variables (undefined: unset) until the returned function puts them back. */
function withEnv(variables: Record<string, string | undefined>): () => void {
  const previous = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    resetConfig();
  };
  apply(variables);
  return () => apply(previous);
}

interface Answer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

async function call(
  stack: TestStack,
  method: string,
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...extra };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
}

const messagesTo = async (email: string, subject: string) =>
  (await sentEmails(email)).filter((message) => message.subject === subject);

async function codeOf(email: string, subject: string): Promise<string> {
  const code = /code (?:is|to choose a password is) (?:<strong>)?(\d{6})/.exec(
    (await messagesTo(email, subject)).at(-1)?.body ?? "",
  )?.[1];
  if (!code) throw new Error(`no code e-mailed to ${email} (${subject})`);
  return code;
}

/** Sign up and verify `email` over HTTP. */
async function signUpVerified(stack: TestStack, email: string) {
  const signedUp = await call(stack, "POST", "/auth/sign-up", {
    email,
    password: PASSWORD,
    firstName: "Ada",
    lastName: "Lovelace",
  });
  expect(signedUp.status).toBe(201);
  const code = await codeOf(email, "Verify your e-mail address");
  expect((await call(stack, "POST", "/auth/verify-email", { email, code })).status).toBe(200);
}

describe("sign-up policy: invite-only, limited to two domains", () => {
  let stack: TestStack;
  let restore: () => void;
  beforeAll(async () => {
    restore = withEnv({
      SIGN_UP_POLICY: "invite-only",
      SIGN_UP_ALLOWED_DOMAINS: "policy.example.test, Other.Example.Test",
    });
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
    restore?.();
  });

  it("answers 400 naming email for an address outside the allowed domains, and sends nothing", async () => {
    const email = freshEmail("outsider", "elsewhere.example.test");
    const answer = await call(stack, "POST", "/auth/sign-up", {
      email,
      password: PASSWORD,
      firstName: "A",
      lastName: "B",
    });
    expect(answer.status).toBe(400);
    expect(answer.body.fields).toEqual(["email"]);
    expect(answer.body.errors).toEqual([
      "email: sign-up is limited to addresses at policy.example.test, other.example.test",
    ]);
    expect(await sentEmails(email)).toHaveLength(0);
    expect(await findUserIdByEmail(email)).toBeUndefined();
  });

  it("without a pending invite: the same 201 and message, no account, and an e-mail saying sign-up is by invitation", async () => {
    const invited = freshEmail("invited");
    const admin = await stack.newUser();
    const clientId = await createClientFor(admin, "Inviting");
    expect(
      (await admin.api.post(`/api/clients/${clientId}/invites`, { email: invited, role: "user" })).status,
    ).toBe(201);
    const uninvited = freshEmail("uninvited", "other.example.test");
    const body = (email: string) => ({ email, password: PASSWORD, firstName: "A", lastName: "B" });
    const [forUninvited, forInvited] = await Promise.all([
      call(stack, "POST", "/auth/sign-up", body(uninvited)),
      call(stack, "POST", "/auth/sign-up", body(invited)),
    ]);
    expect(forUninvited.status).toBe(201);
    expect(forUninvited.body).toEqual(forInvited.body);
    expect(await findUserIdByEmail(uninvited)).toBeUndefined();
    const told = await messagesTo(uninvited, "Sign-up is by invitation");
    expect(told).toHaveLength(1);
    expect(told[0]?.body).toContain("by invitation only");
    expect(await messagesTo(uninvited, "Verify your e-mail address")).toHaveLength(0);
    // The invited address opened an account: verify it and sign in.
    const code = await codeOf(invited, "Verify your e-mail address");
    expect((await call(stack, "POST", "/auth/verify-email", { email: invited, code })).status).toBe(200);
    const signedIn = await call(stack, "POST", "/auth/sign-in", { email: invited, password: PASSWORD });
    expect(signedIn.status).toBe(200);
  });
});

describe("per-IP limit of /auth/*", () => {
  const LIMIT = 5;
  const clock = new TestClock();
  let stack: TestStack;
  let restore: () => void;
  beforeAll(async () => {
    restore = withEnv({ AUTH_REQUESTS_PER_IP_PER_MINUTE: String(LIMIT) });
    stack = await startTestStack({ clock: clock.now });
  });
  afterAll(async () => {
    await stack?.stop();
    restore?.();
  });

  it("answers the limit's requests of a minute, then 429 with Retry-After for any /auth route", async () => {
    const windowStart = clock.toNextWindow();
    const within = [];
    for (let i = 0; i < LIMIT; i++) within.push(await call(stack, "GET", "/auth/session"));
    expect(within.map((answer) => answer.status)).toEqual(Array(LIMIT).fill(401));
    const over = await call(stack, "POST", "/auth/forgot-password", { email: freshEmail("limited") });
    expect(over.status).toBe(429);
    expect(over.body.message).toBe("Too many requests from this address; try again later");
    const retryAfter = Number(over.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Counted on the caller's address, the local gateway's socket address: the stack's URL is on
    // localhost, which the client may reach over IPv4 or IPv6 (one of them for every request, or
    // the limit would not have been reached).
    const counted = await Promise.all(
      ["127.0.0.1", "::1", "::ffff:127.0.0.1"].map((address) =>
        storedItem(keys.rateWindow(`IP#${address}`, windowStart - 1_000)),
      ),
    );
    expect(counted.filter(Boolean)).toEqual([expect.objectContaining({ requestCount: LIMIT })]);
    // The Core API's token routes are not counted on it.
    const user = await stack.newUser();
    expect((await user.api.get(`/api/users/${user.userId}`)).status).toBe(200);
    // The next minute opens again.
    clock.toNextWindow();
    expect((await call(stack, "GET", "/auth/session")).status).toBe(401);
  });
});

describe("default settings on a port of its own: APP_URL, new-browser notice, set-password e-mail, HTML parts", () => {
  let stack: TestStack;
  let restore: () => void;
  beforeAll(async () => {
    restore = withEnv({ APP_URL: undefined });
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
    restore?.();
  });

  it("links e-mails to the Core API's own base URL, as localhost with its real port", async () => {
    const port = new URL(stack.baseUrl).port;
    expect(port).not.toBe("3000");
    const email = freshEmail("linked");
    await call(stack, "POST", "/auth/sign-up", { email, password: PASSWORD, firstName: "A", lastName: "B" });
    const [message] = await messagesTo(email, "Verify your e-mail address");
    expect(message?.body).toContain(`http://localhost:${port}/verify-email?email=`);
    const admin = await stack.newUser();
    const clientId = await createClientFor(admin, "Linking");
    const invitee = freshEmail("invitee");
    const invite = await admin.api.post(`/api/clients/${clientId}/invites`, { email: invitee, role: "user" });
    const [inviteMail] = await sentEmails(invitee);
    expect(inviteMail?.body).toContain(`http://localhost:${port}/invites/${invite.body.invites[0].inviteId}`);
  });

  it("notifies a sign-in from a new browser (not the first one, not a known one) and sets a year-long device cookie", async () => {
    const email = freshEmail("browsers");
    await signUpVerified(stack, email);
    const userId = (await findUserIdByEmail(email)) as string;
    const { token } = await issueToken(userId);
    const notices = async () => {
      const answer = await apiClient(stack.baseUrl, token).get(`/api/users/${userId}/notifications`);
      expect(answer.status).toBe(200);
      return (answer.body.notifications as { title: string; message: string; type: string }[]).filter(
        (notification) => notification.title === "New sign-in",
      );
    };
    const signIn = async (userAgent: string, cookie?: string) => {
      const answer = await call(
        stack,
        "POST",
        "/auth/sign-in",
        { email, password: PASSWORD },
        { "User-Agent": userAgent, ...(cookie ? { Cookie: cookie } : {}) },
      );
      expect(answer.status).toBe(200);
      return answer.headers.getSetCookie();
    };

    // The first sign-in of the account: its first browser, nobody to warn yet.
    const first = await signIn(FIREFOX);
    expect(first).toHaveLength(2);
    const device = first.find((cookie) => cookie.startsWith("device="));
    expect(device).toMatch(/^device=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=31536000; HttpOnly; SameSite=Lax$/);
    const jar = first.map((cookie) => cookie.split(";")[0]).join("; ");
    // The same browser again: known, no notice, the same device cookie renewed.
    const again = await signIn(FIREFOX, jar);
    expect(again.find((cookie) => cookie.startsWith("device="))).toBe(device);
    expect(await notices()).toHaveLength(0);

    // A second browser (no device cookie): one notice naming it.
    const other = await signIn(CHROME);
    const found = await notices();
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ type: "newSignIn" });
    expect(found[0]?.message).toContain("Chrome on Windows");
    expect(found[0]?.message).toMatch(/\d{2}:\d{2}:\d{2} GMT/);
    // That browser is known from now on; a forged device cookie is a new browser.
    await signIn(CHROME, other.map((cookie) => cookie.split(";")[0]).join("; "));
    expect(await notices()).toHaveLength(1);
    await signIn("curl/8.5.0", `device=${"A".repeat(43)}`);
    const after = await notices();
    expect(after).toHaveLength(2);
    expect(after.map((notice) => notice.message).join("\n")).toContain("from curl/8.5.0 on");
  });

  it("admin users create e-mails a set-password code and link; the user sets a password and signs in", async () => {
    const email = freshEmail("created");
    const skipped = freshEmail("skipped");
    const create = (address: string, ...flags: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
        execFile(
          process.execPath,
          [
            "--import",
            "tsx",
            "cli/admin.ts",
            "users",
            "create",
            "--email",
            address,
            "--first-name",
            "Ada",
            "--last-name",
            "L",
            ...flags,
          ],
          { cwd: root, env: process.env, timeout: 60_000 },
          (error, stdout, stderr) =>
            done({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
        );
      });
    const [created, quiet] = await Promise.all([create(email), create(skipped, "--no-password-email")]);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(quiet, quiet.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(created.stdout)).toMatchObject({ userEmail: email });
    expect(await sentEmails(skipped)).toHaveLength(0);

    const [message] = await messagesTo(email, "Set your password");
    const code = await codeOf(email, "Set your password");
    const port = new URL(stack.baseUrl).port;
    expect(message?.body).toContain(
      `http://localhost:${port}/reset-password?email=${encodeURIComponent(email)}&#38;code=${code}`,
    );
    expect(message?.body).toContain("It expires in 24 hours.");
    expect(message?.body).toContain("because an operator created an account for this address");
    // No password yet: nothing signs in.
    expect((await call(stack, "POST", "/auth/sign-in", { email, password: PASSWORD })).status).toBe(401);
    const reset = await call(stack, "POST", "/auth/reset-password", { email, code, password: PASSWORD });
    expect(reset.status).toBe(200);
    // The address counts as verified (the code proved it): sign-in works.
    const signedIn = await call(stack, "POST", "/auth/sign-in", { email, password: PASSWORD });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.users[0]).toMatchObject({ userEmail: email });
  });

  it("sends every kind of e-mail with an HTML part that escapes its values and says who sent it and why", async () => {
    // "You already have an account" (sign-up of a registered address).
    const registered = freshEmail("registered");
    await signUpVerified(stack, registered);
    await call(stack, "POST", "/auth/sign-up", {
      email: registered,
      password: PASSWORD,
      firstName: "A",
      lastName: "B",
    });
    const [already] = await messagesTo(registered, "You already have an account");
    expect(already?.body).toMatch(/^<!doctype html><html><body><p>/);
    const port = new URL(stack.baseUrl).port;
    expect(already?.body).toContain(
      `Sign in at <a href="http://localhost:${port}">http://localhost:${port}</a>, or reset your password at <a href="http://localhost:${port}/forgot-password">`,
    );
    expect(already?.body.replace(/<[^>]*>/g, "")).toContain(
      `Sent by the API gateway at http://localhost:${port} because this address was entered there.`,
    );
    // An invite from a user whose name needs escaping.
    const inviter = await stack.newUser({ firstName: `<b>Eve & "Co"</b>`, lastName: "O'Brien" });
    const clientId = await createClientFor(inviter, "Escaping");
    const invitee = freshEmail("escaped");
    expect(
      (await inviter.api.post(`/api/clients/${clientId}/invites`, { email: invitee, role: "user" })).status,
    ).toBe(201);
    const [invite] = await sentEmails(invitee);
    expect(invite?.body).toMatch(/^<!doctype html>/);
    expect(invite?.body).toContain("&#60;b&#62;Eve &#38; &#34;Co&#34;&#60;/b&#62; O&#39;Brien invited you");
    expect(invite?.body).not.toContain("<b>Eve");
    expect(invite?.body).toContain("because &#60;b&#62;Eve");
    // Verification and reset e-mails have their HTML part (the code in <strong>).
    const resetting = freshEmail("resetting");
    await signUpVerified(stack, resetting);
    await call(stack, "POST", "/auth/forgot-password", { email: resetting });
    for (const subject of ["Verify your e-mail address", "Reset your password"]) {
      const [message] = await messagesTo(resetting, subject);
      expect(message?.body).toMatch(/<strong>\d{6}<\/strong>/);
      expect(message?.body.replace(/<[^>]*>/g, "")).toContain(
        `Sent by the API gateway at http://localhost:${port}`,
      );
    }
  });
});
