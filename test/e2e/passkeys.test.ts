/**
 * Passkeys (issue 22, docs/accounts.md "Passkeys") over real HTTP against the local stack, with a
 * software authenticator (test/support/webauthn-authenticator.ts): register while signed in, sign
 * in with a discoverable credential, single-use challenges, origin and relying-party checks, the
 * signature counter, removal with its last-way-in rule, and the cap of 20 per user.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { passkeyKeys } from "#lib/db/entities/passkey.ts";
import { keys } from "#lib/db/keys.ts";
import { queryPartition } from "#lib/db/store.ts";
import { startSession } from "#lib/domain/accounts.ts";
import {
  CHALLENGE_MESSAGE,
  LAST_WAY_IN_MESSAGE,
  LIMIT_MESSAGE,
  MAX_PASSKEYS_PER_USER,
  NOT_RECOGNISED_MESSAGE,
} from "#lib/domain/passkeys.ts";
import { TestClock } from "../support/clock.ts";
import { sentEmails } from "../support/emulator.ts";
import { startTestStack, storedItem, type TestStack } from "../support/stack.ts";
import { SoftwareAuthenticator } from "../support/webauthn-authenticator.ts";

/** test/setup/file-env.ts sets APP_URL; the relying party defaults to it. */
const ORIGIN = "http://app.gateway.test";
const RP_ID = "app.gateway.test";
const PASSWORD = "correct horse battery staple";

let stack: TestStack;
const clock = new TestClock();
let counter = 0;

beforeAll(async () => {
  stack = await startTestStack({ clock: clock.now });
});
afterAll(async () => {
  await stack?.stop();
});

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
const cookieOf = (answer: Answer) => (answer.headers.get("set-cookie") ?? "").split(";")[0] ?? "";

/** A verified account with a password, signed in: its user id and session cookie. */
async function signedInAccount(): Promise<{ userId: string; email: string; cookie: string }> {
  const email = `passkey${++counter}-${Date.now()}@passkeys.example.test`;
  const signUp = await post("/auth/sign-up", {
    email,
    password: PASSWORD,
    firstName: "Ada",
    lastName: "Lovelace",
  });
  expect(signUp.status, JSON.stringify(signUp.body)).toBe(201);
  const message = (await sentEmails(email)).find((sent) => sent.subject === "Verify your e-mail address");
  const code = /code is (\d{6})/.exec(message?.body.replace(/<[^>]*>/g, "") ?? "")?.[1];
  expect((await post("/auth/verify-email", { email, code })).status).toBe(200);
  const signIn = await post("/auth/sign-in", { email, password: PASSWORD });
  expect(signIn.status, JSON.stringify(signIn.body)).toBe(200);
  return { userId: String(signIn.body.users[0].userId), email, cookie: cookieOf(signIn) };
}

/** A user an operator created (no password), with a session started in-process. */
async function passwordlessUser(): Promise<{ userId: string; cookie: string }> {
  const user = await stack.newUser();
  return { userId: user.userId, cookie: `session=${await startSession(user.userId)}` };
}

async function registrationOptions(cookie: string) {
  const answer = await post("/auth/passkeys/registration-options", undefined, cookie);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as { challengeId: string; options: any };
}

/** Register a new passkey of `authenticator` for the session's user; the answer of the registration. */
async function addPasskey(authenticator: SoftwareAuthenticator, cookie: string, name?: string) {
  const { challengeId, options } = await registrationOptions(cookie);
  const { response } = authenticator.register(options);
  return post("/auth/passkeys/registration", { challengeId, response, ...(name ? { name } : {}) }, cookie);
}

async function authenticationOptions() {
  const answer = await post("/auth/passkeys/authentication-options");
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body as { challengeId: string; options: any };
}

const notificationTitles = async (userId: string) =>
  (await queryPartition(keys.userNotificationPartition(userId), { consistent: true })).map((item) =>
    String(item.title),
  );

describe("register a passkey, then sign in with it", () => {
  it("creates a discoverable credential for the signed-in user and signs in with it: the cookie is a session", async () => {
    const account = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const { challengeId, options } = await registrationOptions(account.cookie);
    expect(options).toMatchObject({
      rp: { id: RP_ID, name: "API gateway" },
      user: { id: Buffer.from(account.userId).toString("base64url"), name: account.email },
      attestation: "none",
      authenticatorSelection: {
        residentKey: "required",
        requireResidentKey: true,
        userVerification: "preferred",
      },
      excludeCredentials: [],
    });
    expect(options.pubKeyCredParams.map((param: { alg: number }) => param.alg)).toContain(-7);

    const { response } = authenticator.register(options);
    const registered = await post(
      "/auth/passkeys/registration",
      { challengeId, response, name: "Laptop" },
      account.cookie,
    );
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expect(registered.body.passkeys).toEqual([
      {
        passkeyId: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        passkeyName: "Laptop",
        passkeyCreated: expect.any(String),
        passkeyLastUsed: null,
        passkeySynced: false,
      },
    ]);
    const passkeyId = registered.body.passkeys[0].passkeyId as string;
    const stored = await storedItem(passkeyKeys.passkey(account.userId, passkeyId));
    expect(stored).toMatchObject({ credentialId: response.id, counter: 0, transports: ["internal"] });
    expect(await notificationTitles(account.userId)).toContain("Passkey added");

    // The next registration excludes it (the authenticator refuses to make a second one).
    const again = await registrationOptions(account.cookie);
    expect(again.options.excludeCredentials).toEqual([
      { id: response.id, type: "public-key", transports: ["internal"] },
    ]);
    expect(() => authenticator.register(again.options)).toThrow(/InvalidStateError/);

    // Sign in with it: no address typed, no allowCredentials.
    const signInOptions = await authenticationOptions();
    expect(signInOptions.options).toMatchObject({ rpId: RP_ID, userVerification: "preferred" });
    expect(signInOptions.options.allowCredentials).toBeUndefined();
    const signedIn = await post("/auth/passkeys/authentication", {
      challengeId: signInOptions.challengeId,
      response: authenticator.authenticate(signInOptions.options),
    });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(signedIn.body).toMatchObject({ message: "Signed in", users: [{ userId: account.userId }] });
    const setCookie = signedIn.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(
      /^session=[0-9a-f-]{36}\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; HttpOnly; SameSite=Lax$/,
    );
    const session = await call("GET", "/auth/session", undefined, cookieOf(signedIn));
    expect(session.status).toBe(200);
    expect(session.body.users[0].userId).toBe(account.userId);

    const listed = await call("GET", "/auth/passkeys", undefined, cookieOf(signedIn));
    expect(listed.status).toBe(200);
    expect(listed.body.passkeys).toEqual([
      expect.objectContaining({ passkeyId, passkeyName: "Laptop", passkeyLastUsed: expect.any(String) }),
    ]);
    expect((await storedItem(passkeyKeys.passkey(account.userId, passkeyId)))?.counter).toBe(1);
  });

  it("refuses a passkey that is not registered (unknown credential, unknown or foreign user handle)", async () => {
    const account = await signedInAccount();
    const registeredOne = new SoftwareAuthenticator(ORIGIN);
    expect((await addPasskey(registeredOne, account.cookie)).status).toBe(201);
    // A credential never registered, under the user's real handle.
    const stranger = new SoftwareAuthenticator(ORIGIN);
    stranger.register({
      challenge: "x",
      rp: { id: RP_ID, name: "x" },
      user: { id: Buffer.from(account.userId).toString("base64url") },
    });
    const { challengeId, options } = await authenticationOptions();
    const refused = await post("/auth/passkeys/authentication", {
      challengeId,
      response: stranger.authenticate(options),
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ message: NOT_RECOGNISED_MESSAGE });
    expect(refused.headers.get("set-cookie")).toBeNull();
    // The registered credential under another user's handle.
    const other = await authenticationOptions();
    const response = registeredOne.authenticate(other.options);
    response.response.userHandle = Buffer.from("00000000-0000-4000-8000-000000000000").toString("base64url");
    const foreign = await post("/auth/passkeys/authentication", { challengeId: other.challengeId, response });
    expect(foreign.status).toBe(401);
  });
});

describe("challenges", () => {
  it("are single use: a replayed sign-in is refused, and so is a challenge of the other ceremony or one that expired", async () => {
    const account = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    expect((await addPasskey(authenticator, account.cookie)).status).toBe(201);
    const { challengeId, options } = await authenticationOptions();
    const body = { challengeId, response: authenticator.authenticate(options) };
    expect((await post("/auth/passkeys/authentication", body)).status).toBe(200);
    const replayed = await post("/auth/passkeys/authentication", body);
    expect(replayed.status).toBe(400);
    expect(replayed.body).toEqual({ message: CHALLENGE_MESSAGE });

    // A registration challenge does not sign in (and is used up by trying).
    const registration = await registrationOptions(account.cookie);
    const wrongCeremony = await post("/auth/passkeys/authentication", {
      challengeId: registration.challengeId,
      response: authenticator.authenticate({ challenge: registration.options.challenge, rpId: RP_ID }),
    });
    expect(wrongCeremony.status).toBe(400);
    const { response: created } = new SoftwareAuthenticator(ORIGIN).register(registration.options);
    const usedUp = await post(
      "/auth/passkeys/registration",
      { challengeId: registration.challengeId, response: created },
      account.cookie,
    );
    expect(usedUp.status).toBe(400);
    expect(usedUp.body).toEqual({ message: CHALLENGE_MESSAGE });

    // Expired after 5 minutes.
    const late = await authenticationOptions();
    clock.advance(5 * 60_000 + 1_000);
    const expired = await post("/auth/passkeys/authentication", {
      challengeId: late.challengeId,
      response: authenticator.authenticate(late.options),
    });
    expect(expired.status).toBe(400);
    expect(expired.body).toEqual({ message: CHALLENGE_MESSAGE });
  });

  it("of 20 parallel sign-ins with one challenge, exactly one succeeds", async () => {
    const account = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    expect((await addPasskey(authenticator, account.cookie)).status).toBe(201);
    const { challengeId, options } = await authenticationOptions();
    const body = { challengeId, response: authenticator.authenticate(options) };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => post("/auth/passkeys/authentication", body)),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 400)).toHaveLength(19);
    expect(answers.filter((answer) => answer.headers.get("set-cookie"))).toHaveLength(1);
  });

  it("of another user cannot register a passkey", async () => {
    const alice = await signedInAccount();
    const bob = await signedInAccount();
    const { challengeId, options } = await registrationOptions(alice.cookie);
    const { response } = new SoftwareAuthenticator(ORIGIN).register(options);
    const answer = await post("/auth/passkeys/registration", { challengeId, response }, bob.cookie);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ message: CHALLENGE_MESSAGE });
  });
});

describe("origin, relying-party id and counter", () => {
  it("refuses a wrong origin or relying-party id at registration and at sign-in", async () => {
    const account = await signedInAccount();
    for (const overrides of [{ origin: "http://evil.example.test" }, { rpId: "evil.example.test" }]) {
      const { challengeId, options } = await registrationOptions(account.cookie);
      const { response } = new SoftwareAuthenticator(ORIGIN).register(options, overrides);
      const answer = await post("/auth/passkeys/registration", { challengeId, response }, account.cookie);
      expect(answer.status, JSON.stringify(overrides)).toBe(400);
      expect(answer.body.message).toMatch(/^Passkey registration could not be verified/);
    }
    expect((await call("GET", "/auth/passkeys", undefined, account.cookie)).body.passkeys).toEqual([]);

    const authenticator = new SoftwareAuthenticator(ORIGIN);
    expect((await addPasskey(authenticator, account.cookie)).status).toBe(201);
    for (const overrides of [
      { origin: "http://evil.example.test" },
      { origin: "https://app.gateway.test" },
      { rpId: "evil.example.test" },
      { rpId: "gateway.test" },
    ]) {
      const { challengeId, options } = await authenticationOptions();
      const answer = await post("/auth/passkeys/authentication", {
        challengeId,
        response: authenticator.authenticate(options, overrides),
      });
      expect(answer.status, JSON.stringify(overrides)).toBe(401);
      expect(answer.body).toEqual({ message: NOT_RECOGNISED_MESSAGE });
    }
    // The challenge signed must be the one claimed.
    const first = await authenticationOptions();
    const second = await authenticationOptions();
    const swapped = await post("/auth/passkeys/authentication", {
      challengeId: second.challengeId,
      response: authenticator.authenticate(first.options),
    });
    expect(swapped.status).toBe(401);
  });

  it("refuses a signature counter that did not move forward (a cloned authenticator)", async () => {
    const account = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const registered = await addPasskey(authenticator, account.cookie);
    const passkeyId = registered.body.passkeys[0].passkeyId as string;
    const signIn = async (counterValue: number) => {
      const { challengeId, options } = await authenticationOptions();
      return post("/auth/passkeys/authentication", {
        challengeId,
        response: authenticator.authenticate(options, { counter: counterValue }),
      });
    };
    expect((await signIn(5)).status).toBe(200);
    expect((await signIn(3)).status).toBe(401);
    expect((await signIn(5)).status).toBe(401);
    expect((await signIn(0)).status).toBe(401);
    expect((await storedItem(passkeyKeys.passkey(account.userId, passkeyId)))?.counter).toBe(5);
    expect((await signIn(6)).status).toBe(200);
    // Two sign-ins reporting the same next counter, each with its own challenge, at once: however
    // they interleave, one gets through (the library's check on what it read, then the conditional write).
    const racing = await Promise.all([signIn(7), signIn(7)]);
    expect(racing.map((answer) => answer.status).sort()).toEqual([200, 401]);
    expect((await storedItem(passkeyKeys.passkey(account.userId, passkeyId)))?.counter).toBe(7);
  });

  it("accepts an authenticator that keeps no counter (always 0)", async () => {
    const account = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN, 0);
    expect((await addPasskey(authenticator, account.cookie)).status).toBe(201);
    for (let round = 0; round < 2; round += 1) {
      const { challengeId, options } = await authenticationOptions();
      const answer = await post("/auth/passkeys/authentication", {
        challengeId,
        response: authenticator.authenticate(options),
      });
      expect(answer.status).toBe(200);
    }
  });
});

describe("a signed-in session is needed", () => {
  it("to start a registration, register, list or remove passkeys", async () => {
    const account = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const registered = await addPasskey(authenticator, account.cookie);
    const passkeyId = registered.body.passkeys[0].passkeyId as string;
    const { challengeId, options } = await registrationOptions(account.cookie);
    const { response } = new SoftwareAuthenticator(ORIGIN).register(options);
    for (const cookie of [
      undefined,
      "session=00000000-0000-4000-8000-000000000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    ]) {
      expect((await post("/auth/passkeys/registration-options", undefined, cookie)).status).toBe(401);
      expect((await post("/auth/passkeys/registration", { challengeId, response }, cookie)).status).toBe(401);
      expect((await call("GET", "/auth/passkeys", undefined, cookie)).status).toBe(401);
      const removal = await call("DELETE", `/auth/passkeys/${passkeyId}`, undefined, cookie);
      expect(removal.status).toBe(401);
      expect(removal.body).toEqual({ message: "Not signed in" });
    }
    expect(await storedItem(passkeyKeys.passkey(account.userId, passkeyId))).toBeDefined();
  });
});

describe("removing a passkey", () => {
  it("works for its owner (it no longer signs in), is a 404 for anyone else's, and notifies", async () => {
    const owner = await signedInAccount();
    const other = await signedInAccount();
    const authenticator = new SoftwareAuthenticator(ORIGIN);
    const registered = await addPasskey(authenticator, owner.cookie);
    const passkeyId = registered.body.passkeys[0].passkeyId as string;
    const foreign = await call("DELETE", `/auth/passkeys/${passkeyId}`, undefined, other.cookie);
    expect(foreign.status).toBe(404);
    // The owner has a password: the only passkey can go.
    const removed = await call("DELETE", `/auth/passkeys/${passkeyId}`, undefined, owner.cookie);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(await notificationTitles(owner.userId)).toContain("Passkey removed");
    expect((await call("GET", "/auth/passkeys", undefined, owner.cookie)).body.passkeys).toEqual([]);
    const { challengeId, options } = await authenticationOptions();
    const signIn = await post("/auth/passkeys/authentication", {
      challengeId,
      response: authenticator.authenticate(options),
    });
    expect(signIn.status).toBe(401);
    expect((await call("DELETE", `/auth/passkeys/${passkeyId}`, undefined, owner.cookie)).status).toBe(404);
  });

  it("keeps a user without a password a way in: of two parallel removals of the last two passkeys one is refused", async () => {
    const user = await passwordlessUser();
    const ids: string[] = [];
    for (const name of ["Phone", "Key"]) {
      const answer = await addPasskey(new SoftwareAuthenticator(ORIGIN), user.cookie, name);
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      ids.push(answer.body.passkeys.at(-1).passkeyId);
    }
    const answers = await Promise.all(
      ids.map((passkeyId) => call("DELETE", `/auth/passkeys/${passkeyId}`, undefined, user.cookie)),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    expect(answers.find((answer) => answer.status === 409)?.body).toEqual({ message: LAST_WAY_IN_MESSAGE });
    const left = await call("GET", "/auth/passkeys", undefined, user.cookie);
    expect(left.body.passkeys).toHaveLength(1);
    const last = await call(
      "DELETE",
      `/auth/passkeys/${left.body.passkeys[0].passkeyId}`,
      undefined,
      user.cookie,
    );
    expect(last.status).toBe(409);
    expect(await storedItem(passkeyKeys.count(user.userId))).toMatchObject({ passkeyCount: 1 });
  });
});

describe(`at most ${MAX_PASSKEYS_PER_USER} passkeys per user`, () => {
  it("refuses the options and the registration past the cap, exactly under racing registrations", async () => {
    const account = await signedInAccount();
    for (let index = 1; index < MAX_PASSKEYS_PER_USER; index += 1) {
      const answer = await addPasskey(new SoftwareAuthenticator(ORIGIN), account.cookie, `Key ${index}`);
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
    }
    // Two registrations started at 19 passkeys, finished in parallel: one makes 20, one is refused.
    const started = await Promise.all([
      registrationOptions(account.cookie),
      registrationOptions(account.cookie),
    ]);
    const answers = await Promise.all(
      started.map(({ challengeId, options }) =>
        post(
          "/auth/passkeys/registration",
          { challengeId, response: new SoftwareAuthenticator(ORIGIN).register(options).response },
          account.cookie,
        ),
      ),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    expect(answers.find((answer) => answer.status === 409)?.body).toEqual({ message: LIMIT_MESSAGE });
    const listed = await call("GET", "/auth/passkeys", undefined, account.cookie);
    expect(listed.body.passkeys).toHaveLength(MAX_PASSKEYS_PER_USER);
    const refused = await post("/auth/passkeys/registration-options", undefined, account.cookie);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ message: LIMIT_MESSAGE });
    // Removing one makes room again.
    const removed = await call(
      "DELETE",
      `/auth/passkeys/${listed.body.passkeys[0].passkeyId}`,
      undefined,
      account.cookie,
    );
    expect(removed.status).toBe(200);
    expect((await addPasskey(new SoftwareAuthenticator(ORIGIN), account.cookie)).status).toBe(201);
  });
});
