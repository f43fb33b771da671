/** Reading the cancellation reasons of a failed TransactWriteItems (SDK property or emulator message). */
import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import { proxyItemOf } from "#lib/db/entities/proxy.ts";
import {
  cancelledSteps,
  isConditionalCheckFailure,
  isExpired,
  keyOf,
  type TransactionStep,
  transactItemsOf,
  transactionCancellationCodes,
  withoutInternals,
} from "#lib/db/store.ts";

function namedError(name: string, message: string, extra: Record<string, unknown> = {}): Error {
  const error = new Error(message);
  error.name = name;
  return Object.assign(error, extra);
}

describe("transactionCancellationCodes", () => {
  it("reads the SDK's CancellationReasons property", () => {
    const error = new TransactionCanceledException({
      message: "Transaction cancelled, please refer cancellation reasons for specific reasons [None, None]",
      $metadata: {},
      CancellationReasons: [{ Code: "None" }, { Code: "ConditionalCheckFailed", Message: "failed" }],
    });
    // The property wins over the message.
    expect(transactionCancellationCodes(error)).toEqual(["None", "ConditionalCheckFailed"]);
  });

  it("treats a reason without a code as None", () => {
    const error = namedError("TransactionCanceledException", "cancelled", {
      CancellationReasons: [{}, { Code: "TransactionConflict" }],
    });
    expect(transactionCancellationCodes(error)).toEqual(["None", "TransactionConflict"]);
  });

  it("reads the reasons from the message when the property is absent", () => {
    const error = namedError(
      "TransactionCanceledException",
      "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed, None]",
    );
    expect(transactionCancellationCodes(error)).toEqual(["None", "ConditionalCheckFailed", "None"]);
  });

  it("reads empty entries in the message as None", () => {
    const error = namedError("TransactionCanceledException", "cancelled [ConditionalCheckFailed,  , None]");
    expect(transactionCancellationCodes(error)).toEqual(["ConditionalCheckFailed", "None", "None"]);
  });

  it("is undefined when the message has no reasons", () => {
    expect(transactionCancellationCodes(namedError("TransactionCanceledException", "cancelled"))).toBe(
      undefined,
    );
  });

  it("is undefined for anything that is not a cancelled transaction", () => {
    expect(transactionCancellationCodes(namedError("ConditionalCheckFailedException", "x [None]"))).toBe(
      undefined,
    );
    expect(transactionCancellationCodes(new Error("[ConditionalCheckFailed]"))).toBe(undefined);
    expect(
      transactionCancellationCodes({ name: "TransactionCanceledException", CancellationReasons: [] }),
    ).toBe(undefined);
    expect(transactionCancellationCodes(undefined)).toBe(undefined);
  });
});

describe("keyOf", () => {
  it("keeps the physical key of an item and nothing else", () => {
    expect(keyOf({ pKey: "CLIENT#c", sKey: "PROXY#p", proxyName: "main" })).toEqual({
      pKey: "CLIENT#c",
      sKey: "PROXY#p",
    });
  });

  it("refuses an item without a string key, naming the field", () => {
    expect(() => keyOf({ pKey: "CLIENT#c" })).toThrow(/sKey/);
    expect(() => keyOf({ pKey: 7, sKey: "x" })).toThrow(/pKey/);
  });
});

describe("isConditionalCheckFailure", () => {
  it("recognises the SDK error by name only", () => {
    expect(isConditionalCheckFailure(namedError("ConditionalCheckFailedException", "x"))).toBe(true);
    expect(isConditionalCheckFailure(namedError("TransactionCanceledException", "x"))).toBe(false);
    expect(isConditionalCheckFailure({ name: "ConditionalCheckFailedException" })).toBe(false);
  });
});

describe("isExpired and withoutInternals", () => {
  it("treats a TTL at or before now as expired", () => {
    expect(isExpired({ TTL: 100 }, 100)).toBe(true);
    expect(isExpired({ TTL: 99 }, 100)).toBe(true);
    expect(isExpired({ TTL: 101 }, 100)).toBe(false);
    expect(isExpired({}, 100)).toBe(false);
  });

  it("strips physical keys and internal attributes", () => {
    expect(
      withoutInternals(
        {
          pKey: "a",
          sKey: "b",
          gsi1pk: "c",
          gsi1sk: "d",
          gsi2pk: "e",
          gsi2sk: "f",
          entity: "x",
          name: "kept",
          TTL: 1,
        },
        ["TTL"],
      ),
    ).toEqual({ name: "kept" });
  });
});

describe("named transaction steps", () => {
  const steps: TransactionStep[] = ["check target", "write proxy", "claim alias"].map((name) => ({
    name,
    action: { ConditionCheck: { TableName: "t", Key: { pKey: name, sKey: "x" }, ConditionExpression: "c" } },
  }));

  it("names the steps whose condition failed, and says when another transaction conflicted", () => {
    const error = namedError("TransactionCanceledException", "cancelled", {
      CancellationReasons: [
        { Code: "None" },
        { Code: "TransactionConflict" },
        { Code: "ConditionalCheckFailed" },
      ],
    });
    expect(cancelledSteps(error, steps)).toEqual({ failed: ["claim alias"], conflict: true });
    expect(transactItemsOf(steps)).toEqual(steps.map((step) => step.action));
  });

  it("is undefined for an error that is not a cancellation", () => {
    expect(cancelledSteps(new Error("network"), steps)).toBeUndefined();
  });
});

describe("the proxy entity", () => {
  const stored = {
    pKey: "CLIENT#c",
    sKey: "PROXY#p",
    entity: "proxy",
    proxyId: "p",
    clientId: "c",
    userId: "u",
    parentId: "c",
    proxyName: "main",
    proxyRegion: "us-east-1",
    proxyProxyCredentialId: "pc",
    proxyTargetId: "t",
    proxyTargetCredentialId: "tc",
    proxyActive: true,
    proxyDefaultRuleEffect: "allow",
    proxyAdditionalHeaders: {},
    proxyAdditionalQueryParams: {},
    proxyAdditionalData: {},
    proxyTimeoutSeconds: 30,
    proxyCreatedAt: "2026-01-01T00:00:00.000Z",
    proxyUpdatedAt: "2026-01-01T00:00:00.000Z",
    proxyVersion: 3,
  };

  it("reads a stored proxy as typed fields", () => {
    expect(proxyItemOf(stored)).toEqual(stored);
    // Items written before versions existed count as version 1.
    const { proxyVersion: _version, ...unversioned } = stored;
    expect(proxyItemOf(unversioned).proxyVersion).toBe(1);
  });

  it("refuses an item that is not a proxy, naming the field", () => {
    expect(() => proxyItemOf({ ...stored, proxyActive: "yes" })).toThrow(/proxyActive/);
    expect(() => proxyItemOf({ ...stored, entity: "target" })).toThrow(/entity/);
  });
});
