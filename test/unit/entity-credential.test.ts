/** The credential entity's reader: a stored credential as typed fields; anything else refused by field name. */
import { describe, expect, it } from "vitest";
import { credentialItemOf } from "#lib/db/entities/credential.ts";
import { toApiCredential } from "#lib/domain/credentials.ts";

const envelope = {
  v: 1,
  alg: "AES-256-GCM",
  keyId: "arn:aws:kms:us-east-1:000000000000:key/k",
  encryptedDataKey: "ZGF0YS1rZXk=",
  iv: "AAAAAAAAAAAAAAAA",
  tag: "AAAAAAAAAAAAAAAAAAAAAA==",
  ciphertext: "Y2lwaGVydGV4dC1ub3QtcGxhaW50ZXh0",
};

const stored = {
  pKey: "CLIENT#c",
  sKey: "CREDENTIAL#k",
  entity: "credential",
  credentialId: "k",
  clientId: "c",
  userId: "u",
  parentId: "c",
  credentialName: "upstream key",
  credentialType: "target",
  credentialAuthType: "apiKey",
  credentialRegion: "us-east-1",
  credentialDefaultRuleEffect: "allow",
  singleUse: false,
  credentialSecretHeaders: ["x-api-key"],
  credentialCreatedAt: "2026-01-01T00:00:00.000Z",
  credentialUpdatedAt: "2026-01-01T00:00:00.000Z",
  secretEnvelope: envelope,
};

describe("the credential entity", () => {
  it("reads a stored credential as typed fields, the envelope kept as it is", () => {
    expect(credentialItemOf(stored)).toEqual(stored);
    const withExtra = { ...stored, secretEnvelope: { ...envelope, future: "field" } };
    expect(credentialItemOf(withExtra).secretEnvelope).toEqual(withExtra.secretEnvelope);
    const temporary = { ...stored, credentialTemporary: true, TTL: 1_900_000_000 };
    expect(credentialItemOf(temporary)).toEqual(temporary);
  });

  it("refuses an item that is not a credential, naming the field and never a value", () => {
    expect(() => credentialItemOf({ ...stored, singleUse: "no" })).toThrow(/singleUse/);
    expect(() => credentialItemOf({ ...stored, credentialAuthType: "password" })).toThrow(
      /credentialAuthType/,
    );
    expect(() => credentialItemOf({ ...stored, entity: "target" })).toThrow(/entity/);
    const { secretEnvelope: _envelope, ...withoutEnvelope } = stored;
    expect(() => credentialItemOf(withoutEnvelope)).toThrow(/secretEnvelope/);
    const broken = { ...stored, secretEnvelope: { ...envelope, ciphertext: 42, v: 2 } };
    let message = "";
    try {
      credentialItemOf(broken);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/secretEnvelope\.(v|ciphertext)/);
    expect(message).not.toContain(envelope.encryptedDataKey);
    expect(message).not.toContain("42");
  });

  it("shows metadata only: no envelope, keys as ids, credentialTemporary always a boolean", () => {
    const shown = toApiCredential({ ...stored, deletingAt: "x", jwksCache: { keys: [] } });
    expect(shown).not.toHaveProperty("secretEnvelope");
    expect(shown).not.toHaveProperty("deletingAt");
    expect(shown).not.toHaveProperty("jwksCache");
    expect(shown).not.toHaveProperty("entity");
    expect(shown).toMatchObject({ pKey: "c", sKey: "k", credentialTemporary: false });
  });
});
