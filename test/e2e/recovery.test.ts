/**
 * Recovery ends every way in (docs/accounts.md "Recovery"),
 * over real HTTP against the local stack: a password reset revokes every session, API token and
 * MCP OAuth grant and lists the passkeys with a removal token; a signed-in password change does the
 * same on request; a scheduled deletion revokes at once and a sign-in during its grace period may
 * cancel it.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findUser } from "#lib/db/entities/user.ts";
import { purgeDueAccounts } from "#lib/domain/account-deletion.ts";
import { issueToken } from "#lib/domain/tokens.ts";
import { type AccountHolder, newAccountHolder } from "../support/accounts.ts";
import { TestClock } from "../support/clock.ts";
import { sentEmails } from "../support/emulator.ts";
import { type HttpAnswer, send } from "../support/sessions.ts";
import { type ApiClient, apiClient, startTestStack, type TestStack } from "../support/stack.ts";
import { SoftwareAuthenticator } from "../support/webauthn-authenticator.ts";

const REDIRECT_URI = "http://127.0.0.1:33419/callback";
/** test/setup/file-env.ts sets APP_URL; the passkeys' relying party and the e-mails' links follow it. */
const APP_URL = "http://app.gateway.test";
const DAY_MS = 24 * 3600_000;
/** Each test hashes a dozen passwords (scrypt, about 350 ms each) on 2 shared cores. */
const SLOW_TEST_MS = 120_000;
let stack: TestStack;
let mcpOrigin: string;
const clock = new TestClock();

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
  mcpOrigin = new URL(stack.mcpUrl).origin;
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** A strong password nobody guesses (the common-password check accepts it). */
const strongPassword = () => `recovery ${randomBytes(12).toString("base64url")} lantern`;

type Answer = HttpAnswer;

const call = (method: string, path: string, body?: unknown, cookie?: string): Promise<Answer> =>
  send(stack.baseUrl, method, path, { body, headers: cookie ? { Cookie: cookie } : {} });
const post = (path: string, body?: unknown, cookie?: string) => call("POST", path, body, cookie);
const cookieOf = (answer: Answer) => (answer.headers.get("set-cookie") ?? "").split(";")[0] ?? "";

/** A person with an account (e-mail and password) and a Core API client of an API token of theirs. */
interface Person extends AccountHolder {
  token: string;
  api: ApiClient;
}
async function newPerson(label = "recovery"): Promise<Person> {
  const holder = await newAccountHolder(label);
  const { token } = await issueToken(holder.userId, { tokenName: "laptop" });
  return { ...holder, token, api: apiClient(stack.baseUrl, token) };
}

async function signIn(person: AccountHolder, password = person.password): Promise<string> {
  const answer = await post("/auth/sign-in", { email: person.email, password });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return cookieOf(answer);
}

const formPost = (path: string, fields: Record<string, string>) =>
  fetch(`${mcpOrigin}${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

/** An MCP agent the person approved on the consent page: its access and refresh tokens. */
async function mcpGrant(person: AccountHolder) {
  const registered = (await (
    await fetch(`${mcpOrigin}/oauth/register`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "Recovery agent" }),
    })
  ).json()) as Record<string, any>;
  const clientId = String(registered.client_id);
  const verifier = randomBytes(32).toString("base64url");
  const params = {
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "s",
    resource: stack.mcpUrl,
  };
  const approved = await formPost("/oauth/authorize", {
    ...params,
    email: person.email,
    password: person.password,
    consent: "approve",
  });
  if (![302, 303].includes(approved.status))
    throw new Error(`consent: ${approved.status} ${await approved.text()}`);
  const code = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? "";
  const exchanged = await formPost("/oauth/token", {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
  });
  expect(exchanged.status).toBe(200);
  const tokens = (await exchanged.json()) as Record<string, string>;
  return { clientId, accessToken: String(tokens.access_token), refreshToken: String(tokens.refresh_token) };
}

type Grant = Awaited<ReturnType<typeof mcpGrant>>;

/** The MCP endpoint's answer to a tools/list with the grant's access token. */
const mcpStatus = async (grant: Grant) =>
  (
    await fetch(stack.mcpUrl, {
      method: "POST",
      headers: {
        authorization: `Bearer ${grant.accessToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    })
  ).status;

/** Refresh with the grant's refresh token: the status and the OAuth error, if any. */
async function refresh(grant: Grant) {
  const answer = await formPost("/oauth/token", {
    grant_type: "refresh_token",
    refresh_token: grant.refreshToken,
    client_id: grant.clientId,
  });
  const body = (await answer.json()) as Record<string, any>;
  return { status: answer.status, error: body.error as string | undefined };
}

/** Forgot-password, then the reset with the e-mailed code: the reset's answer. */
async function resetPassword(person: AccountHolder, password = strongPassword()): Promise<Answer> {
  expect((await post("/auth/forgot-password", { email: person.email })).status).toBe(200);
  const messages = (await sentEmails(person.email)).filter((m) => m.subject === "Reset your password");
  const code = /code is (\d{6})/.exec((messages.at(-1)?.body ?? "").replace(/<[^>]*>/g, ""))?.[1];
  expect(code).toBeDefined();
  const answer = await post("/auth/reset-password", { email: person.email, code, password });
  person.password = password;
  return answer;
}

describe("a password reset ends every way in", { timeout: SLOW_TEST_MS }, () => {
  it("revokes the API tokens and the MCP grants made before it: the token is 401, the refresh token invalid_grant, the access token refused", async () => {
    const person = await newPerson();
    const grant = await mcpGrant(person);
    const session = await signIn(person);
    // Before: everything works.
    expect((await person.api.get("/api/users")).status).toBe(200);
    expect(await mcpStatus(grant)).toBe(200);

    const reset = await resetPassword(person);
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);

    expect((await call("GET", "/auth/session", undefined, session)).status).toBe(401);
    expect((await person.api.get("/api/users")).status).toBe(401);
    expect(await mcpStatus(grant)).toBe(401);
    expect(await refresh(grant)).toEqual({ status: 400, error: "invalid_grant" });
  });
});

/** Register a passkey named `name` for the session's user. */
async function addPasskey(cookie: string, name: string, authenticator = new SoftwareAuthenticator(APP_URL)) {
  const options = await post("/auth/passkeys/registration-options", undefined, cookie);
  expect(options.status, JSON.stringify(options.body)).toBe(200);
  const { response } = authenticator.register(options.body.options);
  const added = await post(
    "/auth/passkeys/registration",
    { challengeId: options.body.challengeId, response, name },
    cookie,
  );
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return { authenticator, passkeyId: String(added.body.passkeys.at(-1).passkeyId) };
}

/** The HTML part (what the emulator keeps) of the newest e-mail of `subject` to `email`, unescaped. */
async function latestEmail(email: string, subject: string): Promise<string> {
  const messages = (await sentEmails(email)).filter((m) => m.subject === subject);
  expect(messages.length).toBeGreaterThan(0);
  return (messages.at(-1)?.body ?? "").replace(/&#38;/g, "&");
}

const removeLink = (email: string, passkeyId: string, token: string) =>
  `${APP_URL}/remove-passkey?${new URLSearchParams({ email, passkeyId, token })}`;

describe("revocation racing an intruder who keeps making tokens", { timeout: SLOW_TEST_MS }, () => {
  it("leaves no token alive: every token made before or during the reset is 401 after it", async () => {
    const person = await newPerson();
    const made: string[] = [person.token];
    let resetDone = false;
    // The intruder's loop: each new token makes the next one, until the reset has answered.
    const intruder = (async () => {
      let api = person.api;
      const ids: string[] = [];
      while (!resetDone) {
        const answer = await api.post(`/api/users/${person.userId}/tokens`, { tokenName: "intruder" });
        // At the cap of 20, the oldest of the intruder's own tokens makes room.
        if (answer.status === 400 && ids.length > 1) {
          await api.delete(`/api/users/${person.userId}/tokens/${ids.shift()}`);
          continue;
        }
        if (answer.status !== 201) break;
        made.push(String(answer.body.tokens[0].token));
        ids.push(String(answer.body.tokens[0].tokenId));
        api = apiClient(stack.baseUrl, made.at(-1));
      }
    })();
    const reset = await resetPassword(person);
    resetDone = true;
    await intruder;
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    expect(made.length).toBeGreaterThan(1);
    const statuses = await Promise.all(
      made.map((token) => apiClient(stack.baseUrl, token).get("/api/users")),
    );
    expect(statuses.map((answer) => answer.status)).toEqual(made.map(() => 401));
    expect((await findUser(person.userId))?.tokens).toEqual({});
  });
});

describe("the reset lists the passkeys, and its recovery token removes them", {
  timeout: SLOW_TEST_MS,
}, () => {
  it("answers the counts, the passkeys and a recovery token; the e-mail lists each passkey with its removal link", async () => {
    const person = await newPerson();
    const cookie = await signIn(person);
    const first = await addPasskey(cookie, "Laptop <b>key</b>");
    const second = await addPasskey(cookie, "Phone");
    await mcpGrant(person);

    const reset = await resetPassword(person);
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    // Revoked: the session, the laptop token and the MCP approval's token, and the grant.
    expect(reset.body.revoked).toEqual({ sessions: 1, tokens: 2, grants: 1 });
    expect(reset.body.passkeys.map((p: any) => [p.passkeyId, p.passkeyName])).toEqual([
      [first.passkeyId, "Laptop <b>key</b>"],
      [second.passkeyId, "Phone"],
    ]);
    expect(reset.body.passkeys[0]).toMatchObject({
      passkeyCreated: expect.any(String),
      passkeyLastUsed: null,
    });
    const token = String(reset.body.recoveryToken);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const mail = await latestEmail(person.email, "Your password was changed");
    expect(mail).toContain("1 session, 2 API tokens and 1 MCP grant");
    expect(mail).toContain(removeLink(person.email, first.passkeyId, token));
    expect(mail).toContain(removeLink(person.email, second.passkeyId, token));
    // The passkey's name is escaped in the HTML part, never markup.
    expect(mail).toContain("Laptop &#60;b&#62;key&#60;/b&#62;");
    expect(mail).not.toContain("<b>key</b>");
  });

  it("says so when the user has no passkeys", async () => {
    const person = await newPerson();
    const reset = await resetPassword(person);
    expect(reset.status).toBe(200);
    expect(reset.body.passkeys).toEqual([]);
    expect(reset.body.revoked).toEqual({ sessions: 0, tokens: 1, grants: 0 });
    expect(await latestEmail(person.email, "Your password was changed")).toContain(
      "Your account has no passkeys.",
    );
  });

  it("removes passkeys with the token (one 200 of racing removals of one passkey); a wrong token, an unknown address, another user's passkey and an expired token are refused", async () => {
    const person = await newPerson();
    const other = await newPerson();
    const cookie = await signIn(person);
    const keys = [
      await addPasskey(cookie, "One"),
      await addPasskey(cookie, "Two"),
      await addPasskey(cookie, "Three"),
    ];
    const foreign = await addPasskey(await signIn(other), "Not yours");
    const token = String((await resetPassword(person)).body.recoveryToken);
    const remove = (passkeyId: string, recoveryToken = token, email = person.email) =>
      post("/auth/passkeys/remove", { email, passkeyId, recoveryToken });

    const invalid = { status: 400, body: { message: "Invalid or expired link" } };
    expect(await remove(keys[0]!.passkeyId, randomBytes(32).toString("base64url"))).toMatchObject(invalid);
    expect(
      await remove(keys[0]!.passkeyId, token, `nobody-${randomBytes(4).toString("hex")}@x.test`),
    ).toMatchObject(invalid);
    // The token is this user's: another user's address with it is refused alike.
    expect(await remove(foreign.passkeyId, token, other.email)).toMatchObject(invalid);
    expect((await remove(foreign.passkeyId)).status).toBe(404);

    const racing = await Promise.all(Array.from({ length: 5 }, () => remove(keys[0]!.passkeyId)));
    expect(racing.map((answer) => answer.status).sort()).toEqual([200, 404, 404, 404, 404]);
    expect(racing.find((answer) => answer.status === 200)?.body).toEqual({ message: "Passkey removed" });
    // The same token removes another passkey.
    expect((await remove(keys[1]!.passkeyId)).status).toBe(200);
    // The removed passkeys no longer sign in; the user sees one left.
    const listed = await call("GET", "/auth/passkeys", undefined, await signIn(person));
    expect(listed.body.passkeys.map((p: any) => p.passkeyId)).toEqual([keys[2]!.passkeyId]);
    const options = await post("/auth/passkeys/authentication-options");
    const signInWithRemoved = await post("/auth/passkeys/authentication", {
      challengeId: options.body.challengeId,
      response: keys[0]!.authenticator.authenticate(options.body.options),
    });
    expect(signInWithRemoved.status).toBe(401);

    // 24 hours later the token is void.
    clock.advance(DAY_MS + 1000);
    expect(await remove(keys[2]!.passkeyId)).toMatchObject(invalid);
    // The other user's passkey was never touched.
    const otherList = await call("GET", "/auth/passkeys", undefined, await signIn(other));
    expect(otherList.body.passkeys.map((p: any) => p.passkeyId)).toEqual([foreign.passkeyId]);
  });
});

describe("POST /auth/change-password", { timeout: SLOW_TEST_MS }, () => {
  it("needs a session", async () => {
    const answer = await post("/auth/change-password", {
      currentPassword: "x",
      newPassword: strongPassword(),
    });
    expect(answer.status).toBe(401);
  });

  it("refuses a wrong current password (400 naming currentPassword), counted toward the sign-in lockout: the 6th is a 429", async () => {
    const person = await newPerson();
    const cookie = await signIn(person);
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const wrong = await post(
        "/auth/change-password",
        { currentPassword: `wrong-${attempt}`, newPassword: strongPassword() },
        cookie,
      );
      expect(wrong.status).toBe(400);
      expect(wrong.body).toMatchObject({
        fields: ["currentPassword"],
        errors: ["currentPassword: does not match your current password"],
      });
    }
    const locked = await post(
      "/auth/change-password",
      { currentPassword: person.password, newPassword: strongPassword() },
      cookie,
    );
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // The same lockout as sign-in's: the address is locked there too.
    expect((await post("/auth/sign-in", { email: person.email, password: person.password })).status).toBe(
      429,
    );
  });

  it("refuses a common new password (400 naming newPassword) and changes nothing", async () => {
    const person = await newPerson();
    const cookie = await signIn(person);
    const common = await post(
      "/auth/change-password",
      { currentPassword: person.password, newPassword: "password1234" },
      cookie,
    );
    expect(common.status).toBe(400);
    expect(common.body.fields).toEqual(["newPassword"]);
    const short = await post(
      "/auth/change-password",
      { currentPassword: person.password, newPassword: "short" },
      cookie,
    );
    expect(short.body.fields).toEqual(["newPassword"]);
    expect((await person.api.get("/api/users")).status).toBe(200);
    await signIn(person);
  });

  it("with signOutOtherSessions (the default) revokes every other session, token and grant; the current session lives", async () => {
    const person = await newPerson();
    const grant = await mcpGrant(person);
    const current = await signIn(person);
    const other = await signIn(person);
    const oldPassword = person.password;
    const newPassword = strongPassword();
    const changed = await post(
      "/auth/change-password",
      { currentPassword: oldPassword, newPassword },
      current,
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body).toEqual({
      message: "Password changed",
      revoked: { sessions: 1, tokens: 2, grants: 1 },
    });
    person.password = newPassword;

    expect((await call("GET", "/auth/session", undefined, current)).status).toBe(200);
    expect((await call("GET", "/auth/session", undefined, other)).status).toBe(401);
    expect((await person.api.get("/api/users")).status).toBe(401);
    expect(await mcpStatus(grant)).toBe(401);
    expect(await refresh(grant)).toEqual({ status: 400, error: "invalid_grant" });
    expect((await post("/auth/sign-in", { email: person.email, password: oldPassword })).status).toBe(401);
    await signIn(person);
    // The user is told.
    const notes = await call("GET", `/api/users/${person.userId}/notifications`, undefined, current);
    expect(JSON.stringify(notes.body)).toContain("Password changed");
  });

  it("with signOutOtherSessions false revokes nothing", async () => {
    const person = await newPerson();
    const grant = await mcpGrant(person);
    const current = await signIn(person);
    const other = await signIn(person);
    const newPassword = strongPassword();
    const changed = await post(
      "/auth/change-password",
      { currentPassword: person.password, newPassword, signOutOtherSessions: false },
      current,
    );
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.revoked).toEqual({ sessions: 0, tokens: 0, grants: 0 });
    person.password = newPassword;
    expect((await call("GET", "/auth/session", undefined, current)).status).toBe(200);
    expect((await call("GET", "/auth/session", undefined, other)).status).toBe(200);
    expect((await person.api.get("/api/users")).status).toBe(200);
    expect(await mcpStatus(grant)).toBe(200);
    expect((await refresh(grant)).status).toBe(200);
  });
});

describe("a scheduled deletion", { timeout: SLOW_TEST_MS }, () => {
  it("revokes every session, token and grant at once; sign-in during the grace period is a 409 unless it cancels the deletion", async () => {
    const person = await newPerson();
    const grant = await mcpGrant(person);
    const session = await signIn(person);
    const passkey = await addPasskey(session, "Deletion key");

    const scheduled = await person.api.delete(`/api/users/${person.userId}`);
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const due = String(scheduled.body.userDeletionScheduledAt);
    expect(scheduled.body).toEqual({ message: expect.any(String), userDeletionScheduledAt: due });

    expect((await call("GET", "/auth/session", undefined, session)).status).toBe(401);
    expect((await person.api.get("/api/users")).status).toBe(401);
    expect(await mcpStatus(grant)).toBe(401);
    expect(await refresh(grant)).toEqual({ status: 400, error: "invalid_grant" });

    // The right password: 409, no session. A wrong one: the usual 401.
    const refused = await post("/auth/sign-in", { email: person.email, password: person.password });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      message: `This account is scheduled for deletion on ${due}; sign in again with cancelDeletion to cancel the deletion`,
      userDeletionScheduledAt: due,
    });
    expect(refused.headers.get("set-cookie")).toBeNull();
    expect(
      (await post("/auth/sign-in", { email: person.email, password: "wrong password here" })).status,
    ).toBe(401);
    // A passkey sign-in: the same 409.
    const options = await post("/auth/passkeys/authentication-options");
    const byPasskey = await post("/auth/passkeys/authentication", {
      challengeId: options.body.challengeId,
      response: passkey.authenticator.authenticate(options.body.options),
    });
    expect(byPasskey.status).toBe(409);
    expect(byPasskey.body.userDeletionScheduledAt).toBe(due);
    expect(byPasskey.headers.get("set-cookie")).toBeNull();
    // The MCP consent page approves nothing for it (no new API token, no code).
    await expect(mcpGrant(person)).rejects.toThrow(/409/);
    expect((await findUser(person.userId))?.tokens).toEqual({});

    // cancelDeletion: signed in, the user active again, out of the queue.
    const cancelled = await post("/auth/sign-in", {
      email: person.email,
      password: person.password,
      cancelDeletion: true,
    });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.users[0].userStatus).toBeUndefined();
    expect(cancelled.body.users[0].userDeletionScheduledAt).toBeUndefined();
    const cookie = cookieOf(cancelled);
    const me = await call("GET", "/api/users", undefined, cookie);
    expect(me.status).toBe(200);
    expect(me.body.users[0].userStatus).toBeUndefined();
    // The purge, run after the due time, leaves the user be.
    await purgeDueAccounts(new Date(Date.parse(due) + 1000));
    const user = await findUser(person.userId);
    expect(user?.userStatus).toBeUndefined();
    expect(user?.gsi2pk).toBeUndefined();
    expect((await call("GET", "/auth/session", undefined, cookie)).status).toBe(200);
  });
});
