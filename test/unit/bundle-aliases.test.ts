/**
 * The modules the data-plane bundle puts in place of SDK code (cdk/bundle.ts DATA_PLANE_ALIASES)
 * behave as the originals: SHA-256 (plain and HMAC) and CRC-32 give the SDK's bytes, a SigV4
 * signature made with ours is the one made with the SDK's, and the endpoint cache's LRU keeps the
 * most recently used entries. (The emulator does not check signatures, so this is where a wrong
 * hash would show.)
 */
import { randomBytes } from "node:crypto";
import { Crc32 as SdkCrc32, Sha256 as SdkSha256 } from "@smithy/core/checksum";
import { HttpRequest } from "@smithy/core/protocols";
import { SignatureV4 } from "@smithy/signature-v4";
import { describe, expect, it } from "vitest";
import { DATA_PLANE_ALIASES } from "../../cdk/bundle.ts";
import LRUCache from "../../lib/aws/lru-cache.ts";
import { Crc32, Sha256 } from "../../lib/aws/sha256.ts";

const inputs = [
  "",
  "abc",
  "é and 😀",
  new Uint8Array(0),
  randomBytes(1),
  randomBytes(64),
  randomBytes(1000),
  new Uint8Array(randomBytes(100).buffer, 7, 50),
];

interface Hasher {
  update(data: never): void;
  digest(): Promise<Uint8Array>;
}

async function both(ours: Hasher, theirs: Hasher, chunks: unknown[]) {
  for (const chunk of chunks) {
    ours.update(chunk as never);
    theirs.update(chunk as never);
  }
  return [
    Buffer.from(await ours.digest()).toString("hex"),
    Buffer.from(await theirs.digest()).toString("hex"),
  ];
}

describe("the bundle's replacement modules", () => {
  it("are the ones cdk/bundle.ts aliases", () => {
    expect(DATA_PLANE_ALIASES["@smithy/core/checksum"]).toMatch(/lib\/aws\/sha256\.ts$/);
    expect(DATA_PLANE_ALIASES["mnemonist/lru-cache"]).toMatch(/lib\/aws\/lru-cache\.ts$/);
  });

  it("hash (SHA-256) every input as the SDK does, one chunk or several, plain or keyed", async () => {
    for (const input of inputs) {
      const [ours, theirs] = await both(new Sha256(), new SdkSha256(), [input]);
      expect(ours).toBe(theirs);
      expect(ours).toHaveLength(64);
      for (const key of ["k", randomBytes(32), new Uint8Array(0).buffer]) {
        const [a, b] = await both(new Sha256(key), new SdkSha256(key), [input, "tail", randomBytes(3)]);
        expect(a).toBe(b);
      }
    }
  });

  it("goes on after a plain digest and starts again after reset, as the SDK's does", async () => {
    const ours = new Sha256();
    const theirs = new SdkSha256();
    expect(await both(ours, theirs, ["part one"])).toEqual(
      await both(new Sha256(), new SdkSha256(), ["part one"]),
    );
    const [a, b] = await both(ours, theirs, ["part two"]);
    expect(a).toBe(b);
    ours.reset();
    theirs.reset();
    const [c, d] = await both(ours, theirs, ["fresh"]);
    expect(c).toBe(d);
    const hmac = new Sha256("key");
    hmac.update("x");
    await hmac.digest();
    expect(() => hmac.update("y")).toThrow(/already finished/);
  });

  it("signs a DynamoDB request (SigV4) exactly as the SDK's SHA-256 does", async () => {
    const request = () =>
      new HttpRequest({
        method: "POST",
        protocol: "https:",
        hostname: "dynamodb.eu-west-1.amazonaws.com",
        path: "/",
        headers: {
          host: "dynamodb.eu-west-1.amazonaws.com",
          "content-type": "application/x-amz-json-1.0",
          "x-amz-target": "DynamoDB_20120810.GetItem",
        },
        body: JSON.stringify({ TableName: "t", Key: { pKey: { S: "é" } } }),
      });
    const signer = (sha256: typeof Sha256) =>
      new SignatureV4({
        service: "dynamodb",
        region: "eu-west-1",
        sha256: sha256 as never,
        credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: "token" },
      });
    const signingDate = new Date("2026-11-27T05:00:00Z");
    const ours = await signer(Sha256).sign(request(), { signingDate });
    const theirs = await signer(SdkSha256 as typeof Sha256).sign(request(), { signingDate });
    expect(ours.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261127\//);
    expect(ours.headers).toEqual(theirs.headers);
  });

  it("computes CRC-32 as the SDK does", async () => {
    for (const input of inputs.filter((value) => typeof value !== "string")) {
      const [ours, theirs] = await both(new Crc32(), new SdkCrc32(), [input, input]);
      expect(ours).toBe(theirs);
    }
    const crc = new Crc32();
    crc.update(Buffer.from("123456789"));
    expect(crc.digestSync()).toBe(0xcbf43926);
    crc.reset();
    expect(crc.digestSync()).toBe(0);
  });

  it("keeps the most recently used entries of the endpoint cache", () => {
    const cache = new LRUCache<string, number>(2);
    cache.set("a", 1).set("b", 2);
    expect(cache.get("a")).toBe(1); // a is now the most recent
    cache.set("c", 3); // evicts b
    expect(cache.has("b")).toBe(false);
    expect([cache.get("a"), cache.get("c"), cache.size]).toEqual([1, 3, 2]);
    expect(cache.peek("a")).toBe(1); // peek does not refresh: a stays the oldest
    cache.set("d", 4);
    expect([cache.has("a"), cache.has("c"), cache.has("d")]).toEqual([false, true, true]);
    cache.set("c", 30); // an update refreshes
    cache.set("e", 5);
    expect([cache.get("c"), cache.has("d"), cache.get("e")]).toEqual([30, false, 5]);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.get("c")).toBeUndefined();
    expect(() => new LRUCache(0)).toThrow(/capacity/);
  });
});
