/**
 * Nothing half-done when an invite's e-mail fails (lib/domain/invite-lifecycle.ts create), for client
 * and MSP invites over real HTTP: SES refuses a sender it has not verified, so the test points the
 * sender at an unverified address. The caller gets 502, the invite is withdrawn, and its e-mail
 * lock is released: the same invite succeeds once e-mail works again (a leftover lock would be 409).
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { resetConfig } from "#lib/config.ts";
import { createMsp } from "#lib/domain/msps.ts";
import { sentEmails } from "../support/emulator.ts";
import { createClientFor, startTestStack, type TestStack } from "../support/stack.ts";

let stack: TestStack;
const sender = process.env.EMAIL_SENDER;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});
afterEach(resetEmail);

function resetEmail() {
  if (sender === undefined) delete process.env.EMAIL_SENDER;
  else process.env.EMAIL_SENDER = sender;
  resetConfig();
}

/** Until resetEmail: e-mail goes out from an address SES has not verified, so every send fails. */
function breakEmail() {
  process.env.EMAIL_SENDER = `unverified-${randomUUID().slice(0, 8)}@unverified.example`;
  resetConfig();
}

const NOT_CREATED = "Could not send the invite email; the invite was not created";

describe("an invite whose e-mail fails is withdrawn", () => {
  it("client invite: 502, no invite listed, no e-mail; then the same invite succeeds", async () => {
    const owner = await stack.newUser();
    const clientId = await createClientFor(owner, "Invite Failure Co");
    const email = `invitee-${randomUUID().slice(0, 8)}@example.test`;
    breakEmail();
    const failed = await owner.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" });
    expect(failed.status, JSON.stringify(failed.body)).toBe(502);
    expect(failed.body.message).toBe(NOT_CREATED);
    resetEmail();
    const listed = await owner.api.get(`/api/clients/${clientId}/invites`);
    expect(listed.status).toBe(200);
    expect(listed.body.invites).toEqual([]);
    expect(await sentEmails(email)).toEqual([]);
    const again = await owner.api.post(`/api/clients/${clientId}/invites`, { email, role: "user" });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(await sentEmails(email)).toHaveLength(1);
  });

  it("MSP invite: 502, no invite listed, no e-mail; then the same invite succeeds", async () => {
    const owner = await stack.newUser();
    const { msp } = await createMsp({ name: `MSP ${randomUUID().slice(0, 8)}`, ownerUserId: owner.userId });
    const path = `/api/msps/${msp.mspId}/invites`;
    const userEmail = `msp-invitee-${randomUUID().slice(0, 8)}@example.test`;
    breakEmail();
    const failed = await owner.api.post(path, { userEmail, roles: ["msp_user"] });
    expect(failed.status, JSON.stringify(failed.body)).toBe(502);
    expect(failed.body.message).toBe(NOT_CREATED);
    resetEmail();
    const listed = await owner.api.get(path);
    expect(listed.status).toBe(200);
    expect(listed.body.invites).toEqual([]);
    expect(await sentEmails(userEmail)).toEqual([]);
    const again = await owner.api.post(path, { userEmail, roles: ["msp_user"] });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(await sentEmails(userEmail)).toHaveLength(1);
  });
});
