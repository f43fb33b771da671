/**
 * `@smithy/core/checksum` for the data-plane bundle (esbuild alias, cdk/bundle.ts): the two names
 * the bundled SDK code imports from it, `Sha256` (the DynamoDB and KMS clients' request signing)
 * and `Crc32` (event streams, which no client of the data plane uses). The SDK's own `Sha256Node` falls back to a JavaScript SHA-256 (3 KiB of the
 * cold start) when `node:crypto` has none, which never happens on Node: this one always uses
 * `node:crypto`, with the same interface (a secret makes it an HMAC; `digest` finishes an HMAC and
 * copies a plain hash, so a plain hash can go on after a digest).
 */
import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import { crc32 } from "node:zlib";

type SourceData = string | ArrayBuffer | ArrayBufferView;

const bytesOf = (data: SourceData): string | Buffer =>
  typeof data === "string"
    ? data
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

export class Sha256 {
  readonly digestLength = 32;
  private readonly secret: SourceData | undefined;
  private hash: Hash | Hmac;
  private finished = false;

  constructor(secret?: SourceData) {
    this.secret = secret;
    this.hash = this.create();
  }

  update(data: SourceData): void {
    if (this.finished) throw new Error("Attempted to update an already finished hash.");
    this.hash.update(bytesOf(data));
  }

  async digest(): Promise<Uint8Array> {
    let out: Buffer;
    if (this.secret) {
      this.finished = true;
      out = this.hash.digest();
    } else out = (this.hash as Hash).copy().digest();
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  }

  reset(): void {
    this.hash = this.create();
    this.finished = false;
  }

  private create(): Hash | Hmac {
    return this.secret ? createHmac("sha256", bytesOf(this.secret)) : createHash("sha256");
  }
}

/** CRC-32 with `node:zlib` (Node 20.15 and later), the interface of the SDK's `Crc32Node`. */
export class Crc32 {
  readonly digestLength = 4;
  private value = 0;

  update(data: Uint8Array): void {
    this.value = crc32(data, this.value);
  }

  digestSync(): number {
    return this.value >>> 0;
  }

  async digest(): Promise<Uint8Array> {
    const out = new Uint8Array(4);
    new DataView(out.buffer).setUint32(0, this.digestSync(), false);
    return out;
  }

  reset(): void {
    this.value = 0;
  }
}
