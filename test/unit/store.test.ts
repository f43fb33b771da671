/** Reading the cancellation reasons of a failed TransactWriteItems (SDK property or emulator message). */
import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { describe, expect, it } from "vitest";
import {
  isConditionalCheckFailure,
  isExpired,
  transactionCancellationCodes,
  transactionConditionFailedAt,
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
    expect(transactionConditionFailedAt(error, 1)).toBe(true);
    expect(transactionConditionFailedAt(error, 0)).toBe(false);
    expect(transactionConditionFailedAt(error, 2)).toBe(false);
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
    expect(transactionConditionFailedAt(error, 1)).toBe(true);
    expect(transactionConditionFailedAt(error, 0)).toBe(false);
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
    expect(transactionConditionFailedAt("ConditionalCheckFailed", 0)).toBe(false);
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
