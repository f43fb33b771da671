/**
 * Content codings (lib/net/content-coding.ts): every coding and stacked codings decoded, the bound
 * on the decoded size (bombs), corrupt and unknown codings, and the zstd frame check that keeps the
 * portable decoder from allocating what a forged header declares.
 */
import { describe, expect, it } from "vitest";
import {
  ContentCodingError,
  codingsOf,
  decodeBody,
  ZSTD_MAX_WINDOW_BYTES,
  zstdFrameLimits,
} from "#lib/net/content-coding.ts";
import { ACCEPTED_CODINGS } from "#lib/net/outbound.ts";
import { CODINGS, encodeBody } from "../support/content-codings.ts";

const LIMIT = 6 * 1024 * 1024;
const text = JSON.stringify({ hello: "world", list: Array.from({ length: 200 }, (_, i) => ({ i })) });

async function failure(promise: Promise<unknown>): Promise<ContentCodingError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ContentCodingError);
  return error as ContentCodingError;
}

describe("codingsOf", () => {
  it("lists the codings in the order applied, lower case, identity and blanks left out", () => {
    expect(codingsOf(undefined)).toEqual([]);
    expect(codingsOf("identity")).toEqual([]);
    expect(codingsOf(" GZIP , br ")).toEqual(["gzip", "br"]);
    expect(codingsOf(["gzip", "identity, zstd"])).toEqual(["gzip", "zstd"]);
    expect(codingsOf(",,")).toEqual([]);
  });

  it("the gateway asks for exactly the codings it decodes", () => {
    expect(ACCEPTED_CODINGS).toBe("gzip, deflate, br, zstd");
  });
});

describe("decodeBody", () => {
  it.each([...CODINGS, "deflate-raw", "identity"])("decodes %s", async (coding) => {
    const header = coding === "deflate-raw" ? "deflate" : coding;
    const decoded = await decodeBody(encodeBody(coding, text), header, LIMIT);
    expect(decoded.toString("utf8")).toBe(text);
  });

  it.each([["gzip, br"], ["br, zstd"], ["deflate, gzip, br"]])(
    "undoes stacked codings last applied first: %s",
    async (codings) => {
      expect((await decodeBody(encodeBody(codings, text), codings, LIMIT)).toString()).toBe(text);
    },
  );

  it("leaves an empty body alone whatever the header says (HEAD, 204, 304)", async () => {
    expect((await decodeBody(Buffer.alloc(0), "gzip", LIMIT)).length).toBe(0);
  });

  it("accepts a body of exactly the limit and refuses one byte more", async () => {
    const exact = Buffer.alloc(1000, 0x61);
    expect((await decodeBody(encodeBody("gzip", exact), "gzip", 1000)).length).toBe(1000);
    const over = await failure(decodeBody(encodeBody("gzip", Buffer.alloc(1001, 0x61)), "gzip", 1000));
    expect(over.failure).toBe("too-large");
  });

  it.each([...CODINGS, "gzip, br"])(
    "%s: a 64 MiB bomb is refused as too large, in bounded memory",
    async (coding) => {
      const bomb = encodeBody(coding, Buffer.alloc(64 * 1024 * 1024));
      expect(bomb.length).toBeLessThan(200 * 1024);
      const before = process.memoryUsage().rss;
      const error = await failure(decodeBody(bomb, coding, LIMIT));
      expect(error.failure).toBe("too-large");
      // Never the 64 MiB: at most the limit and the decoder's own buffers.
      expect(process.memoryUsage().rss - before).toBeLessThan(48 * 1024 * 1024);
    },
  );

  it.each(["gzip", "deflate", "br", "zstd"])(
    "%s: bytes that are not valid in the coding are corrupt",
    async (coding) => {
      const error = await failure(decodeBody(Buffer.from("plain text, not compressed"), coding, LIMIT));
      expect(error.failure).toBe("corrupt");
      expect(error.coding).toBe(coding);
    },
  );

  it("a truncated gzip stream is corrupt", async () => {
    const whole = encodeBody("gzip", text);
    expect((await failure(decodeBody(whole.subarray(0, whole.length - 10), "gzip", LIMIT))).failure).toBe(
      "corrupt",
    );
  });

  it("an unknown coding is unsupported before any work, its name made safe to show", async () => {
    const error = await failure(decodeBody(encodeBody("gzip", text), "gzip, compress", LIMIT));
    expect(error.failure).toBe("unsupported");
    expect(error.coding).toBe("compress");
    const odd = await failure(decodeBody(Buffer.from("x"), 'x\u00e9"y', LIMIT));
    expect(odd.coding).toBe("x??y");
  });
});

describe("zstd frames", () => {
  it("reads the declared window and content size of every frame, skippable frames included", () => {
    const one = encodeBody("zstd", text);
    const skippable = Buffer.concat([Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0]), Buffer.from("abc")]);
    const limits = zstdFrameLimits(Buffer.concat([one, skippable, one]));
    expect(limits.declaredContent).toBe(2 * text.length);
    expect(limits.window).toBeGreaterThanOrEqual(text.length);
  });

  it("refuses broken framing", () => {
    const one = encodeBody("zstd", text);
    expect(() => zstdFrameLimits(one.subarray(0, one.length - 3))).toThrow(ContentCodingError);
    expect(() => zstdFrameLimits(Buffer.from([1, 2, 3, 4, 5, 6]))).toThrow(ContentCodingError);
    expect(() => zstdFrameLimits(Buffer.alloc(0))).toThrow(ContentCodingError);
  });

  it("a forged header declaring 2 GiB of content is too large without being decoded", async () => {
    // Magic, descriptor: 4-byte content size, single segment; content size 2^31; one empty raw last block.
    const forged = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0, 0x80, 0x01, 0, 0]);
    expect(zstdFrameLimits(forged).declaredContent).toBe(2 ** 31);
    expect((await failure(decodeBody(forged, "zstd", LIMIT))).failure).toBe("too-large");
  });

  it("a window over 8 MiB (RFC 9659) is refused", async () => {
    // Magic, descriptor: no content size, not single segment; window descriptor 2^(10+14) = 16 MiB.
    const wide = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 14 << 3, 0x01, 0, 0]);
    expect(zstdFrameLimits(wide).window).toBeGreaterThan(ZSTD_MAX_WINDOW_BYTES);
    expect((await failure(decodeBody(wide, "zstd", LIMIT))).failure).toBe("corrupt");
  });
});
