/**
 * Signed-in browsers for e2e tests over real HTTP (issue 21): a user of the test stack (with their
 * API token) who sets a password with a reset code (read from the emulator's SES messages) and
 * signs in, answering the session cookie to send back.
 */
import { expect } from "vitest";
import { issueToken } from "#lib/domain/tokens.ts";
import { sentEmails } from "./emulator.ts";
import { apiClient, type TestStack, type TestUser } from "./stack.ts";

export const TEST_PASSWORD = "correct horse battery staple";

export interface HttpAnswer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

/** One request with the given headers (JSON body when given). */
export async function send(
  baseUrl: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = { text };
  }
  return { status: response.status, body, headers: response.headers };
}

/** The code of the newest e-mail of `subject` to `email`. */
export async function latestEmailedCode(email: string, subject: string): Promise<string> {
  const messages = (await sentEmails(email)).filter((message) => message.subject === subject);
  const text = (messages.at(-1)?.body ?? "").replace(/<[^>]*>/g, "");
  const code = /code is (\d{6})/.exec(text)?.[1];
  if (!code) throw new Error(`no code e-mailed to ${email} (${subject})`);
  return code;
}

/** Sign `email` in; answers the session cookie (`name=value`) to send back. */
export async function signIn(baseUrl: string, email: string, password = TEST_PASSWORD): Promise<string> {
  const answer = await send(baseUrl, "POST", "/auth/sign-in", { body: { email, password } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const cookie = (answer.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  expect(cookie).toMatch(/^session=/);
  return cookie;
}

/** A new user of the stack (with their token) who set a password and signed in once. */
/**
 * Give `user` the password TEST_PASSWORD with a reset code, as a person would. The reset revokes
 * every API token of the user (docs/accounts.md "Recovery ends every way in"): the answer carries a
 * new token and its API client in place of the old ones.
 */
export async function withPassword<U extends TestUser>(stack: TestStack, user: U): Promise<U> {
  await send(stack.baseUrl, "POST", "/auth/forgot-password", { body: { email: user.email } });
  const code = await latestEmailedCode(user.email, "Reset your password");
  const reset = await send(stack.baseUrl, "POST", "/auth/reset-password", {
    body: { email: user.email, code, password: TEST_PASSWORD },
  });
  expect(reset.status, JSON.stringify(reset.body)).toBe(200);
  const { token } = await issueToken(user.userId);
  return { ...user, token, api: apiClient(stack.baseUrl, token) };
}

export async function signedInUser(stack: TestStack): Promise<TestUser & { cookie: string }> {
  const user = await withPassword(stack, await stack.newUser());
  return { ...user, cookie: await signIn(stack.baseUrl, user.email) };
}
