/**
 * Envelope encryption of credential secrets against the emulator's KMS (this file's own key alias in
 * both regions): what is stored, round trips, context binding, tampering and the data-key cache.
 */
import type { KMSClient } from "@aws-sdk/client-kms";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { kms } from "#lib/aws/clients.ts";
import { getConfig } from "#lib/config.ts";
import {
  clearDataKeyCache,
  DATA_KEY_CACHE_TTL_MS,
  dataKeyCacheSize,
  decryptSecret,
  decryptSecretCached,
  encryptSecret,
  type SecretEnvelope,
  SecretEnvelopeError,
} from "#lib/vault/envelope.ts";
import { provisionKey } from "#local/provision.ts";

const REGION = "us-east-1";
const OTHER_REGION = "eu-west-1";
const secret = {
  keyName: "X-Api-Key",
  keyValue: "sk_live_8f3e2b9c4d1a7e6f5b0c9d8e7f6a5b4c",
  placement: "header",
  additionalHeaders: { "X-Tenant": "acme-tenant-secret" },
};
const ids = { clientId: "client-1", credentialId: "cred-1" };

/** Count the KMS commands this process sends in a region, by name. */
function countKmsCalls(client: KMSClient) {
  const calls: string[] = [];
  const name = `count-${Math.random().toString(36).slice(2)}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push(String(context.commandName));
      return next(args);
    },
    { step: "initialize", name },
  );
  return { calls, stop: () => client.middlewareStack.remove(name) };
}

async function failure(promise: Promise<unknown>): Promise<SecretEnvelopeError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SecretEnvelopeError);
  return error as SecretEnvelopeError;
}

const flip = (base64: string) => {
  const bytes = Buffer.from(base64, "base64");
  bytes[0] = (bytes[0] ?? 0) ^ 1;
  return bytes.toString("base64");
};

beforeAll(async () => {
  const alias = getConfig().kmsKeyAlias;
  await Promise.all([provisionKey(REGION, alias), provisionKey(OTHER_REGION, alias)]);
});

afterEach(() => clearDataKeyCache());

describe("encryptSecret", () => {
  it("stores a v1 AES-256-GCM envelope with no plaintext of the secret in it", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    expect(Object.keys(envelope).sort()).toEqual(
      ["alg", "ciphertext", "encryptedDataKey", "iv", "keyId", "tag", "v"].sort(),
    );
    expect(envelope).toMatchObject({ v: 1, alg: "AES-256-GCM" });
    expect(envelope.keyId).toMatch(/^arn:aws:kms:us-east-1:\d+:key\//);
    expect(Buffer.from(envelope.iv, "base64")).toHaveLength(12);
    expect(Buffer.from(envelope.tag, "base64")).toHaveLength(16);
    expect(Buffer.from(envelope.encryptedDataKey, "base64").length).toBeGreaterThan(32);

    const stored = JSON.stringify(envelope);
    const decodedFields = [envelope.ciphertext, envelope.encryptedDataKey].map((f) =>
      Buffer.from(f, "base64").toString("latin1"),
    );
    for (const plaintext of [
      secret.keyValue,
      secret.keyValue.slice(8, 20),
      "acme-tenant-secret",
      "X-Api-Key",
    ]) {
      expect(stored).not.toContain(plaintext);
      for (const decoded of decodedFields) expect(decoded).not.toContain(plaintext);
    }
  });

  it("uses a fresh IV and data key every time", async () => {
    const envelopes = await Promise.all(
      Array.from({ length: 5 }, () => encryptSecret({ region: REGION, ...ids, secret })),
    );
    expect(new Set(envelopes.map((e) => e.iv)).size).toBe(5);
    expect(new Set(envelopes.map((e) => e.ciphertext)).size).toBe(5);
    expect(new Set(envelopes.map((e) => e.encryptedDataKey)).size).toBe(5);
  });

  it("asks KMS for an AES-256 data key under the configured alias, bound to the credential", async () => {
    const seen: Record<string, unknown>[] = [];
    const client = await kms(REGION);
    client.middlewareStack.add(
      (next) => async (args) => {
        seen.push({ ...(args.input as Record<string, unknown>) });
        return next(args);
      },
      { step: "initialize", name: "capture-generate" },
    );
    try {
      await encryptSecret({ region: REGION, ...ids, secret });
    } finally {
      client.middlewareStack.remove("capture-generate");
    }
    expect(seen).toEqual([
      {
        KeyId: getConfig().kmsKeyAlias,
        KeySpec: "AES_256",
        EncryptionContext: { clientId: "client-1", credentialId: "cred-1" },
      },
    ]);
  });
});

describe("decryptSecret", () => {
  it("round-trips the secret", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    expect(await decryptSecret(envelope, { region: REGION, ...ids })).toEqual(secret);
    const unicode = { username: "zoë", password: "пароль 🔑" };
    const other = await encryptSecret({ region: OTHER_REGION, ...ids, secret: unicode });
    expect(await decryptSecret(other, { region: OTHER_REGION, ...ids })).toEqual(unicode);
  });

  it("fails for another clientId or credentialId (KMS encryption context)", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    for (const context of [
      { region: REGION, clientId: "client-2", credentialId: "cred-1" },
      { region: REGION, clientId: "client-1", credentialId: "cred-2" },
      { region: REGION, clientId: "cred-1", credentialId: "client-1" },
    ]) {
      const error = await failure(decryptSecret(envelope, context));
      expect(error.reason).toBe("integrity");
      // Refused by KMS itself, before any AES work.
      expect((error.cause as Error).name).toBe("InvalidCiphertextException");
      expect(error.message).not.toContain(secret.keyValue);
    }
  });

  it("fails in another region (another key)", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    const error = await failure(decryptSecret(envelope, { region: OTHER_REGION, ...ids }));
    expect(["integrity", "kms"]).toContain(error.reason);
  });

  it("fails when the ciphertext, tag or IV was altered, or the envelope is malformed", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    const context = { region: REGION, ...ids };
    for (const field of ["ciphertext", "tag", "iv"] as const) {
      const error = await failure(decryptSecret({ ...envelope, [field]: flip(envelope[field]) }, context));
      expect(error.reason, field).toBe("integrity");
    }
    for (const broken of [
      { ...envelope, v: 2 },
      { ...envelope, alg: "AES-128-CBC" },
      { ...envelope, iv: Buffer.alloc(16).toString("base64") },
      { ...envelope, tag: "not base64!" },
      {},
    ]) {
      expect((await failure(decryptSecret(broken as SecretEnvelope, context))).reason).toBe("malformed");
    }
  });

  it("calls KMS once per decryption", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    const counter = countKmsCalls(await kms(REGION));
    try {
      await decryptSecret(envelope, { region: REGION, ...ids });
      await decryptSecret(envelope, { region: REGION, ...ids });
    } finally {
      counter.stop();
    }
    expect(counter.calls).toEqual(["DecryptCommand", "DecryptCommand"]);
  });
});

describe("decryptSecretCached", () => {
  it("makes no second KMS call for the same envelope", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    const counter = countKmsCalls(await kms(REGION));
    try {
      for (let i = 0; i < 5; i++) {
        expect(await decryptSecretCached(envelope, { region: REGION, ...ids })).toEqual(secret);
      }
    } finally {
      counter.stop();
    }
    expect(counter.calls).toEqual(["DecryptCommand"]);
    expect(dataKeyCacheSize()).toBe(1);
    expect(DATA_KEY_CACHE_TTL_MS).toBeLessThanOrEqual(5 * 60_000);
  });

  it("shares one KMS call between concurrent cold calls", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    const counter = countKmsCalls(await kms(REGION));
    try {
      const results = await Promise.all(
        Array.from({ length: 10 }, () => decryptSecretCached(envelope, { region: REGION, ...ids })),
      );
      expect(results.every((r) => JSON.stringify(r) === JSON.stringify(secret))).toBe(true);
    } finally {
      counter.stop();
    }
    expect(counter.calls).toEqual(["DecryptCommand"]);
  });

  it("still fails for another credential after the key was cached", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    await decryptSecretCached(envelope, { region: REGION, ...ids });
    const error = await failure(
      decryptSecretCached(envelope, { region: REGION, clientId: "client-1", credentialId: "cred-2" }),
    );
    expect(error.reason).toBe("integrity");
    // A ciphertext moved onto another credential with the same wrapped key fails GCM authentication.
    const tampered = { ...envelope, ciphertext: flip(envelope.ciphertext) };
    expect((await failure(decryptSecretCached(tampered, { region: REGION, ...ids }))).reason).toBe(
      "integrity",
    );
  });

  it("calls KMS again after the cache is cleared", async () => {
    const envelope = await encryptSecret({ region: REGION, ...ids, secret });
    const counter = countKmsCalls(await kms(REGION));
    try {
      await decryptSecretCached(envelope, { region: REGION, ...ids });
      clearDataKeyCache();
      expect(dataKeyCacheSize()).toBe(0);
      await decryptSecretCached(envelope, { region: REGION, ...ids });
    } finally {
      counter.stop();
    }
    expect(counter.calls).toEqual(["DecryptCommand", "DecryptCommand"]);
  });
});
