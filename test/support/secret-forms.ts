/**
 * The forms a secret must never be shown in, for tests that read what an echoing target, a tool
 * result or a request log shows: plain, its first 12 characters (no partial leak), percent-encoded,
 * JSON-escaped, base64 and base64url, and 16 characters from the middle of its base64 at each of
 * the 3 alignments, so that it is found inside any longer base64 text containing it (echoed
 * headers, `Bearer <secret>`, `user:<secret>`). Written independently of the redactor.
 */
import { expect } from "vitest";

export function formsOf(secret: string): string[] {
  const forms = [
    secret,
    secret.slice(0, 12),
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    Buffer.from(secret).toString("base64"),
    Buffer.from(secret).toString("base64url"),
  ];
  if (Buffer.byteLength(secret) >= 16) {
    for (let shift = 0; shift < 3; shift++) {
      const core = Buffer.concat([Buffer.alloc(shift), Buffer.from(secret)])
        .toString("base64")
        .slice(4, 20);
      forms.push(core, core.replaceAll("+", "-").replaceAll("/", "_"));
    }
  }
  return forms;
}

/** Fails when `answer` (a string, or anything as JSON) shows any form of any of `secrets`. */
export function expectNoSecret(label: string, answer: unknown, secrets: Iterable<string>): void {
  const text = typeof answer === "string" ? answer : JSON.stringify(answer);
  for (const secret of secrets) {
    for (const form of formsOf(secret)) {
      expect(text.includes(form), `${label} shows ${form} (a form of ${secret})`).toBe(false);
    }
  }
}
