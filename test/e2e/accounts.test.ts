/**
 * Accounts (issue 21, docs/accounts.md) over real HTTP against the local stack: sign-up, e-mail
 * verification, resend, sign-in with its lockout, sessions, sign-out, forgot and reset password.
 * E-mails are read from the emulator; stored state straight from the table.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dynamo } from "#lib/aws/clients.ts";
import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { keys } from "#lib/db/keys.ts";
import { setFirstPassword } from "#lib/domain/accounts.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import { TestClock } from "../support/clock.ts";
import { sentEmails } from "../support/emulator.ts";
import { apiClient, createClientFor, startTestStack, storedItem, type TestStack } from "../support/stack.ts";

const APP_URL = "http://app.gateway.test";
const PASSWORD = "correct horse battery staple";
const NEW_PASSWORD = "a new and longer passphrase";

let stack: TestStack;
const clock = new TestClock();
let counter = 0;

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
});
afterAll(async () => {
  await stack?.stop();
});

const freshEmail = (label = "person") => `${label}${++counter}-${Date.now()}@accounts.example.test`;

interface Answer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

async function call(method: string, path: string, body?: unknown, cookie?: string): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (cookie) headers.Cookie = cookie;
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : {}, headers: response.headers };
}
const post = (path: string, body?: unknown, cookie?: string) => call("POST", path, body, cookie);

/** The `name=value` part of the answer's Set-Cookie, to send back as a Cookie header. */
function cookieOf(answer: Answer): string {
  const setCookie = answer.headers.get("set-cookie") ?? "";
  return setCookie.split(";")[0] ?? "";
}

/**
 * The e-mails of `subject` to `email`, as the emulator recorded them (it keeps the HTML part when
 * there is one; its text is the text part's, with tags around).
 */
async function emailsTo(email: string, subject: string) {
  return (await sentEmails(email))
    .filter((message) => message.subject === subject)
    .map((message) => ({ ...message, body: message.body.replace(/<[^>]*>/g, "") }));
}

/** The code of the newest e-mail of `subject` to `email`. */
async function latestCode(email: string, subject: string): Promise<string> {
  const messages = await emailsTo(email, subject);
  const code = /code is (\d{6})/.exec(messages.at(-1)?.body ?? "")?.[1];
  if (!code) throw new Error(`no code e-mailed to ${email} (${subject})`);
  return code;
}
const verificationCode = (email: string) => latestCode(email, "Verify your e-mail address");
const resetCode = (email: string) => latestCode(email, "Reset your password");

/** A code that is not `code`. */
const otherCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

async function signUp(email: string, password = PASSWORD) {
  const answer = await post("/auth/sign-up", { email, password, firstName: "Ada", lastName: "Lovelace" });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
}

async function signUpVerified(email: string, password = PASSWORD) {
  await signUp(email, password);
  const verified = await post("/auth/verify-email", { email, code: await verificationCode(email) });
  expect(verified.status, JSON.stringify(verified.body)).toBe(200);
}

async function signedIn(email: string, password = PASSWORD): Promise<string> {
  const answer = await post("/auth/sign-in", { email, password });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return cookieOf(answer);
}

const userIdOf = async (email: string) => String((await storedItem(keys.userEmail(email)))?.userId);

describe("POST /auth/sign-up", () => {
  it("answers 201 and e-mails a 6-digit code with the verify link (text part); the user is a full user", async () => {
    const email = freshEmail();
    const answer = await post("/auth/sign-up", {
      email: email.toUpperCase(),
      password: PASSWORD,
      firstName: "Ada",
      lastName: "Lovelace",
    });
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ message: expect.any(String) });
    const [message, ...more] = await emailsTo(email, "Verify your e-mail address");
    expect(more).toEqual([]);
    const code = /code is (\d{6})\./.exec(message?.body ?? "")?.[1];
    expect(code).toMatch(/^\d{6}$/);
    expect(message?.body).toContain(
      `${APP_URL}/verify-email?email=${encodeURIComponent(email)}&code=${code}`,
    );
    // Neither the password nor its hash left in any form; the code is stored hashed.
    expect(JSON.stringify(answer.body)).not.toContain(PASSWORD);
    const userId = await userIdOf(email);
    const stored = await storedItem(keys.accountCode(userId, "verify"));
    expect(JSON.stringify(stored)).not.toContain(String(code));
    expect((await storedItem(keys.userAccount(userId)))?.passwordHash).toMatch(/^scrypt\$131072\$8\$1\$/);
    // A full user: GET /api/users/{userId} (with a token of theirs) shows the names and the address.
    const { token } = await issueToken(userId);
    const user = await apiClient(stack.baseUrl, token).get(`/api/users/${userId}`);
    expect(user.status).toBe(200);
    expect(user.body.users[0]).toMatchObject({
      userEmail: email,
      userFirstName: "Ada",
      userLastName: "Lovelace",
    });
  });

  it("answers the same status and body for an address with an account, which gets an e-mail saying so (no code)", async () => {
    const existing = freshEmail("existing");
    await signUpVerified(existing);
    const fresh = freshEmail("fresh");
    const body = (email: string) => ({
      email,
      password: "another password entirely",
      firstName: "X",
      lastName: "Y",
    });
    const [forExisting, forFresh] = await Promise.all([
      post("/auth/sign-up", body(existing)),
      post("/auth/sign-up", body(fresh)),
    ]);
    expect(forExisting.status).toBe(forFresh.status);
    expect(forExisting.body).toEqual(forFresh.body);
    const told = await emailsTo(existing, "You already have an account");
    expect(told).toHaveLength(1);
    expect(told[0]?.body).not.toMatch(/\d{6}/);
    // The existing account's password did not change.
    await signedIn(existing);
  });

  it("shows the user invites addressed to the address, sent before and after sign-up", async () => {
    const admin = await stack.newUser();
    const clientId = await createClientFor(admin, "Inviting");
    const email = freshEmail("invitee");
    const before = await admin.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" });
    expect(before.status).toBe(201);
    await signUpVerified(email);
    const otherClient = await createClientFor(admin, "Inviting later");
    const after = await admin.api.post(`/api/clients/${otherClient}/invites`, { email, role: "reader" });
    expect(after.status).toBe(201);
    const userId = await userIdOf(email);
    const { token } = await issueToken(userId);
    const invites = await apiClient(stack.baseUrl, token).get(`/api/users/${userId}/invites`);
    expect(invites.status).toBe(200);
    expect(invites.body.invites.map((invite: { inviteId: string }) => invite.inviteId).sort()).toEqual(
      [before.body.invites[0].inviteId, after.body.invites[0].inviteId].sort(),
    );
  });

  it.each([
    ["email", { email: "not-an-address", password: PASSWORD, firstName: "A", lastName: "B" }],
    ["password", { email: "short@example.test", password: "x".repeat(11), firstName: "A", lastName: "B" }],
    ["password", { email: "long@example.test", password: "x".repeat(257), firstName: "A", lastName: "B" }],
    ["firstName", { email: "nofirst@example.test", password: PASSWORD, lastName: "B" }],
    ["lastName", { email: "nolast@example.test", password: PASSWORD, firstName: "A" }],
  ])("answers 400 naming %s", async (field, body) => {
    const answer = await post("/auth/sign-up", body);
    expect(answer.status).toBe(400);
    expect(answer.body.fields).toEqual([field]);
  });

  it("accepts a password of exactly 12 and of 256 characters", async () => {
    // Counted in code points ("é" is one), and neither common (docs/accounts.md, "Password policy").
    const long = [..."é seven lanterns over a quiet harbour ".repeat(10)].slice(0, 256).join("");
    for (const password of ["Gq7#vR2!pL9z", long]) {
      const email = freshEmail("bounds");
      await signUpVerified(email, password);
      await signedIn(email, password);
    }
  });
});

describe("POST /auth/verify-email", () => {
  it("verifies once: a wrong code and a used code are 400 Invalid or expired code", async () => {
    const email = freshEmail();
    await signUp(email);
    const code = await verificationCode(email);
    const wrong = await post("/auth/verify-email", { email, code: otherCode(code) });
    expect(wrong).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
    expect((await post("/auth/verify-email", { email, code })).status).toBe(200);
    const reused = await post("/auth/verify-email", { email, code });
    expect(reused).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
  });

  it("voids the code after 5 wrong ones: the right one is then refused", async () => {
    const email = freshEmail();
    await signUp(email);
    const code = await verificationCode(email);
    for (let i = 0; i < 5; i += 1)
      expect((await post("/auth/verify-email", { email, code: otherCode(code) })).status).toBe(400);
    const right = await post("/auth/verify-email", { email, code });
    expect(right).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
    expect((await post("/auth/sign-in", { email, password: PASSWORD })).status).toBe(403);
  });

  it("counts 20 parallel wrong codes exactly: 5 attempts stored", async () => {
    const email = freshEmail();
    await signUp(email);
    const code = await verificationCode(email);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post("/auth/verify-email", { email, code: otherCode(code) })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(400));
    expect((await storedItem(keys.accountCode(await userIdOf(email), "verify")))?.attempts).toBe(5);
  });

  it("refuses an expired code", async () => {
    const email = freshEmail();
    await signUp(email);
    const code = await verificationCode(email);
    await dynamo(getConfig().homeRegion).send(
      new UpdateCommand({
        TableName: getConfig().tableName,
        Key: keys.accountCode(await userIdOf(email), "verify"),
        UpdateExpression: "SET expiresAt = :past",
        ExpressionAttributeValues: { ":past": Math.floor(Date.now() / 1000) - 1 },
      }),
    );
    const answer = await post("/auth/verify-email", { email, code });
    expect(answer).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
  });

  it("lets exactly one of 20 parallel uses of the right code succeed", async () => {
    const email = freshEmail();
    await signUp(email);
    const code = await verificationCode(email);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post("/auth/verify-email", { email, code })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
  });

  it("answers an unknown address as a wrong code", async () => {
    const answer = await post("/auth/verify-email", { email: freshEmail("nobody"), code: "123456" });
    expect(answer).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
  });
});

describe("POST /auth/resend-verification", () => {
  it("answers the same for any address; a pending account gets a new code and the old one is void", async () => {
    const pending = freshEmail("pending");
    await signUp(pending);
    const first = await verificationCode(pending);
    const verified = freshEmail("verified");
    await signUpVerified(verified);
    const answers = await Promise.all(
      [pending, verified, freshEmail("unknown")].map((email) => post("/auth/resend-verification", { email })),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(answers[0]?.body);
    }
    expect(await emailsTo(verified, "Verify your e-mail address")).toHaveLength(1);
    expect(await emailsTo(pending, "Verify your e-mail address")).toHaveLength(2);
    const second = await verificationCode(pending);
    if (second !== first)
      expect((await post("/auth/verify-email", { email: pending, code: first })).status).toBe(400);
    expect((await post("/auth/verify-email", { email: pending, code: second })).status).toBe(200);
  });

  it("limits the e-mails to one address: the 6th within the hour is 429 with Retry-After", async () => {
    const email = freshEmail("flood");
    const answers = [];
    for (let i = 0; i < 6; i += 1) answers.push(await post("/auth/resend-verification", { email }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(Number(answers[5]?.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("POST /auth/sign-in, GET /auth/session, POST /auth/sign-out", () => {
  it("signs in with a session cookie (HttpOnly, SameSite=Lax, Path=/; not Secure over http) that GET /auth/session accepts", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const answer = await post("/auth/sign-in", { email, password: PASSWORD });
    expect(answer.status).toBe(200);
    expect(answer.body.message).toEqual(expect.any(String));
    expect(answer.body.users).toHaveLength(1);
    expect(answer.body.users[0]).toMatchObject({ userEmail: email, userFirstName: "Ada" });
    const setCookie = answer.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/^session=[^;]+;/);
    const attributes = setCookie.split(";").map((part) => part.trim());
    expect(attributes).toEqual(expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Path=/"]));
    expect(attributes).not.toContain("Secure");
    // The session id is stored hashed: the cookie's secret is not in the stored item.
    const secret = cookieOf(answer).split(".")[1] ?? "";
    const userId = await userIdOf(email);
    const session = await call("GET", "/auth/session", undefined, cookieOf(answer));
    expect(session.status).toBe(200);
    expect(session.body.users[0]).toMatchObject({ userId, userEmail: email });
    const { listSessions } = await import("#lib/db/entities/account.ts");
    const stored = await listSessions(userId);
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(stored[0]?.TTL).toBe(stored[0]?.absoluteExpiresAt);
  });

  it("answers GET /auth/session 401 without a cookie or with an unknown one", async () => {
    expect((await call("GET", "/auth/session")).status).toBe(401);
    const forged = `session=00000000-0000-4000-8000-000000000000.${"A".repeat(43)}`;
    expect((await call("GET", "/auth/session", undefined, forged)).status).toBe(401);
  });

  it("revokes the session on sign-out: the same cookie then gets 401", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const cookie = await signedIn(email);
    const other = await signedIn(email);
    const out = await post("/auth/sign-out", undefined, cookie);
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/^session=; .*Max-Age=0/);
    expect((await call("GET", "/auth/session", undefined, cookie)).status).toBe(401);
    // Only that session: the other browser stays signed in.
    expect((await call("GET", "/auth/session", undefined, other)).status).toBe(200);
  });

  it("answers 401 Invalid email or password for a wrong password and an unknown address alike", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const wrong = await post("/auth/sign-in", { email, password: "not the password at all" });
    const unknown = await post("/auth/sign-in", { email: freshEmail("nobody"), password: PASSWORD });
    for (const answer of [wrong, unknown]) {
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ message: "Invalid email or password" });
      expect(answer.headers.get("set-cookie")).toBeNull();
    }
  });

  it("answers 403 Email address not verified for the right password of an unverified address (401 for a wrong one)", async () => {
    const email = freshEmail();
    await signUp(email);
    const right = await post("/auth/sign-in", { email, password: PASSWORD });
    expect(right).toMatchObject({ status: 403, body: { message: "Email address not verified" } });
    expect(right.headers.get("set-cookie")).toBeNull();
    expect((await post("/auth/sign-in", { email, password: "a wrong password here" })).status).toBe(401);
  });

  it("sets a Secure __Host- cookie when served over https", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const previous = process.env.API_BASE_URL;
    process.env.API_BASE_URL = "https://gateway.example.test/prod";
    try {
      const answer = await post("/auth/sign-in", { email, password: PASSWORD });
      expect(answer.status).toBe(200);
      const setCookie = answer.headers.get("set-cookie") ?? "";
      expect(setCookie).toMatch(/^__Host-session=[^;]+;/);
      const attributes = setCookie.split(";").map((part) => part.trim());
      expect(attributes).toEqual(expect.arrayContaining(["HttpOnly", "SameSite=Lax", "Path=/", "Secure"]));
      expect(attributes.some((a) => a.startsWith("Domain"))).toBe(false);
      expect((await call("GET", "/auth/session", undefined, cookieOf(answer))).status).toBe(200);
    } finally {
      if (previous === undefined) delete process.env.API_BASE_URL;
      else process.env.API_BASE_URL = previous;
    }
  });
});

describe("GET /auth/sessions, DELETE /auth/sessions/{sessionId}", () => {
  it("lists the user's sessions (no secret), marks the current one, and revokes another browser's", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const first = await signedIn(email);
    const second = await signedIn(email);
    const listed = await call("GET", "/auth/sessions", undefined, second);
    expect(listed.status).toBe(200);
    expect(listed.body.sessions).toHaveLength(2);
    const current = listed.body.sessions.filter((s: { current: boolean }) => s.current);
    expect(current).toHaveLength(1);
    for (const cookie of [first, second])
      expect(JSON.stringify(listed.body)).not.toContain(cookie.split(".")[1]);
    const other = listed.body.sessions.find((s: { current: boolean }) => !s.current);
    const revoked = await call("DELETE", `/auth/sessions/${other.sessionId}`, undefined, second);
    expect(revoked.status).toBe(200);
    expect((await call("GET", "/auth/session", undefined, first)).status).toBe(401);
    expect((await call("GET", "/auth/session", undefined, second)).status).toBe(200);
    expect((await call("GET", "/auth/sessions", undefined, second)).body.sessions).toHaveLength(1);
  });

  it("answers 404 for another user's session and 401 without a session", async () => {
    const [mine, theirs] = [freshEmail("mine"), freshEmail("theirs")];
    await Promise.all([signUpVerified(mine), signUpVerified(theirs)]);
    const [myCookie, theirCookie] = await Promise.all([signedIn(mine), signedIn(theirs)]);
    const theirId = (await call("GET", "/auth/sessions", undefined, theirCookie)).body.sessions[0].sessionId;
    const answer = await call("DELETE", `/auth/sessions/${theirId}`, undefined, myCookie);
    expect(answer).toMatchObject({ status: 404, body: { message: "Session not found" } });
    expect((await call("GET", "/auth/session", undefined, theirCookie)).status).toBe(200);
    expect((await call("GET", "/auth/sessions")).status).toBe(401);
    expect((await call("DELETE", `/auth/sessions/${theirId}`)).status).toBe(401);
  });

  it("deletes the account, its codes and its sessions with the user (immediate deletion)", async () => {
    const email = freshEmail("leaving");
    await signUpVerified(email);
    const cookie = await signedIn(email);
    await post("/auth/forgot-password", { email });
    const userId = await userIdOf(email);
    const { token } = await issueToken(userId);
    const deleted = await apiClient(stack.baseUrl, token).delete(
      `/api/users/${userId}?immediatelyDelete=true`,
    );
    expect(deleted.status).toBe(200);
    expect(await storedItem(keys.userAccount(userId))).toBeUndefined();
    expect(await storedItem(keys.accountCode(userId, "reset"))).toBeUndefined();
    const { listSessions } = await import("#lib/db/entities/account.ts");
    expect(await listSessions(userId)).toEqual([]);
    expect((await call("GET", "/auth/session", undefined, cookie)).status).toBe(401);
  });
});

describe("the sign-in lockout", () => {
  it("of 20 parallel wrong sign-ins, exactly 5 get 401 and 15 get 429 with Retry-After; the right password too until the window ends", async () => {
    const email = freshEmail("locked");
    await signUpVerified(email);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post("/auth/sign-in", { email, password: "a wrong password!" })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    for (const answer of answers.filter((a) => a.status === 429)) {
      const retryAfter = Number(answer.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(14 * 60);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    }
    const right = await post("/auth/sign-in", { email, password: PASSWORD });
    expect(right.status).toBe(429);
    expect(right.headers.get("set-cookie")).toBeNull();
    // The window ends 15 minutes after the first failure: then the right password signs in.
    clock.advance(15 * 60_000 + 1_000);
    await signedIn(email);
  });

  it("counts only failures: right passwords between wrong ones do not lock the address", async () => {
    const email = freshEmail("mixed");
    await signUpVerified(email);
    for (let i = 0; i < 4; i += 1)
      expect((await post("/auth/sign-in", { email, password: "a wrong password!" })).status).toBe(401);
    for (let i = 0; i < 3; i += 1) await signedIn(email);
    expect((await post("/auth/sign-in", { email, password: "a wrong password!" })).status).toBe(401);
    expect((await post("/auth/sign-in", { email, password: PASSWORD })).status).toBe(429);
  });

  it("locks an unknown address as it locks a known one (the answers do not tell them apart)", async () => {
    const email = freshEmail("ghost");
    const statuses = [];
    for (let i = 0; i < 6; i += 1)
      statuses.push((await post("/auth/sign-in", { email, password: PASSWORD })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
  });
});

describe("POST /auth/forgot-password, POST /auth/reset-password", () => {
  it("answers the same for known and unknown addresses; the known one gets a code and the reset link", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const [known, unknown] = await Promise.all([
      post("/auth/forgot-password", { email }),
      post("/auth/forgot-password", { email: freshEmail("nobody") }),
    ]);
    expect(known.status).toBe(200);
    expect(unknown.status).toBe(200);
    expect(known.body).toEqual(unknown.body);
    const code = await resetCode(email);
    const [message] = await emailsTo(email, "Reset your password");
    expect(message?.body).toContain(
      `${APP_URL}/reset-password?email=${encodeURIComponent(email)}&code=${code}`,
    );
  });

  it("resets the password: the old one gets 401, the new one signs in, every session is revoked, the code is single use", async () => {
    const email = freshEmail();
    await signUpVerified(email);
    const sessions = [await signedIn(email), await signedIn(email)];
    await post("/auth/forgot-password", { email });
    const code = await resetCode(email);
    const wrong = await post("/auth/reset-password", {
      email,
      code: otherCode(code),
      password: NEW_PASSWORD,
    });
    expect(wrong).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
    expect((await post("/auth/reset-password", { email, code, password: NEW_PASSWORD })).status).toBe(200);
    for (const cookie of sessions)
      expect((await call("GET", "/auth/session", undefined, cookie)).status).toBe(401);
    // The user is told, in their notifications.
    const userId = await userIdOf(email);
    const { token } = await issueToken(userId);
    const notifications = await apiClient(stack.baseUrl, token).get(`/api/users/${userId}/notifications`);
    expect(notifications.status).toBe(200);
    expect(JSON.stringify(notifications.body)).toContain("Password changed");
    expect((await post("/auth/sign-in", { email, password: PASSWORD })).status).toBe(401);
    await signedIn(email, NEW_PASSWORD);
    const again = await post("/auth/reset-password", { email, code, password: "yet another passphrase" });
    expect(again).toMatchObject({ status: 400, body: { message: "Invalid or expired code" } });
  });

  it("lets a user an operator created (no password yet) set one with a reset code", async () => {
    const user = await stack.newUser();
    expect((await post("/auth/sign-in", { email: user.email, password: PASSWORD })).status).toBe(401);
    await post("/auth/forgot-password", { email: user.email });
    const code = await resetCode(user.email);
    expect((await post("/auth/reset-password", { email: user.email, code, password: PASSWORD })).status).toBe(
      200,
    );
    await signedIn(user.email);
  });

  it("refuses a reset password outside 12 to 256 characters (400 naming password)", async () => {
    const answer = await post("/auth/reset-password", {
      email: freshEmail(),
      code: "123456",
      password: "short",
    });
    expect(answer.status).toBe(400);
    expect(answer.body.fields).toEqual(["password"]);
  });
});

describe("an operator's first password (the local operator account of npm start)", () => {
  it("creates a verified account once: sign-in works; a second call changes nothing", async () => {
    const user = await stack.newUser();
    expect(await setFirstPassword(user.userId, PASSWORD)).toBe(true);
    expect((await post("/auth/sign-in", { email: user.email, password: PASSWORD })).status).toBe(200);
    expect(await setFirstPassword(user.userId, NEW_PASSWORD)).toBe(false);
    expect((await post("/auth/sign-in", { email: user.email, password: NEW_PASSWORD })).status).toBe(401);
    expect((await post("/auth/sign-in", { email: user.email, password: PASSWORD })).status).toBe(200);
  });
});
