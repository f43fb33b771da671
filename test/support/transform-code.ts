/** Transform code for tests: incompressible code of an exact size (random base64 in a string literal). */
import { randomBytes } from "node:crypto";
import { codeBytes } from "#lib/domain/transforms/code.ts";

/** Code of exactly `bytes` UTF-8 bytes: a default-export function and a string literal of random base64. */
export function codeOfBytes(bytes: number): string {
  const head = 'export default function (context, request) { return request }\nconst padding = "';
  const tail = '";\n';
  const fill = bytes - codeBytes(head) - codeBytes(tail);
  return head + randomBytes(fill).toString("base64").slice(0, fill) + tail;
}
