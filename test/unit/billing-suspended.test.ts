/**
 * The one rule of a suspended organisation (lib/domain/dunning.ts `billingSuspended`), which the
 * data plane's admission and the Core API's calls to the outside (lib/domain/billing-suspension.ts)
 * both apply to the organisation's runtime item, and the 402 both answer.
 */
import { describe, expect, it } from "vitest";
import { billingSuspendedError } from "#lib/domain/billing-suspension.ts";
import { BILLING_SUSPENDED, billingSuspended } from "#lib/domain/dunning.ts";
import { httpErrorOf } from "#lib/http/errors.ts";

const T = 1_800_000_000_000;
const active = { billingStatus: "active", suspendAt: null, mspSuspended: false };

describe("billingSuspended", () => {
  it("active: no failure, no operator, no MSP suspension", () => {
    expect(billingSuspended(active, T)).toBe(false);
  });

  it("suspended by an operator, by its MSP, or from the grace period's end (inclusive)", () => {
    expect(billingSuspended({ ...active, billingStatus: "suspended" }, T)).toBe(true);
    expect(billingSuspended({ ...active, mspSuspended: true }, T)).toBe(true);
    expect(billingSuspended({ ...active, suspendAt: T + 1 }, T)).toBe(false);
    expect(billingSuspended({ ...active, suspendAt: T }, T)).toBe(true);
    expect(billingSuspended({ ...active, suspendAt: T - 1 }, T)).toBe(true);
  });

  it("the Core API's refusal is the data plane's answer: 402 with the same code and message", () => {
    const http = httpErrorOf(billingSuspendedError());
    expect(http.status).toBe(402);
    expect(http.body).toEqual({ message: BILLING_SUSPENDED.message, code: BILLING_SUSPENDED.code });
    expect(BILLING_SUSPENDED).toEqual({
      code: "billing-suspended",
      message: "Payment required: the account's billing is suspended",
    });
  });
});
