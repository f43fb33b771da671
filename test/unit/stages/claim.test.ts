/**
 * settleClaim (lib/data-plane/stages/claim.ts): the one place a single-use claim is settled.
 * The claims themselves (conditional writes, the cascade) run against the emulator in the e2e
 * tests of single-use credentials.
 */
import { describe, expect, it } from "vitest";
import { type SingleUseClaims, settleClaim } from "#lib/data-plane/stages/claim.ts";
import { context } from "./fixtures.ts";

function recording(fail?: "release" | "consume") {
  const calls: string[] = [];
  const claims: SingleUseClaims = {
    claim: async () => {
      calls.push("claim");
      return true;
    },
    release: async (clientId, credentialId) => {
      calls.push(`release ${clientId}/${credentialId}`);
      if (fail === "release") throw new Error("store down");
    },
    consume: async (clientId, credentialId) => {
      calls.push(`consume ${clientId}/${credentialId}`);
      if (fail === "consume") throw new Error("store down");
    },
  };
  return { calls, claims };
}

const holding = () => {
  const ctx = context();
  ctx.claim = { clientId: "c", credentialId: "k" };
  return ctx;
};

describe("settleClaim", () => {
  it("consumes the credential when the request succeeded", async () => {
    const { calls, claims } = recording();
    const ctx = holding();
    await settleClaim(ctx, claims, true);
    expect(calls).toEqual(["consume c/k"]);
    expect(ctx.claim).toBeUndefined();
  });

  it("releases it otherwise (a target outage must not burn the credential)", async () => {
    const { calls, claims } = recording();
    await settleClaim(holding(), claims, false);
    expect(calls).toEqual(["release c/k"]);
  });

  it("does nothing without a claim, and settles a claim once however often it is called", async () => {
    const { calls, claims } = recording();
    await settleClaim(context(), claims, true);
    expect(calls).toEqual([]);
    const ctx = holding();
    await settleClaim(ctx, claims, false);
    await settleClaim(ctx, claims, true);
    expect(calls).toEqual(["release c/k"]);
  });

  it("never throws: a failed release or deletion is logged, the answer stands", async () => {
    for (const [fail, success] of [
      ["release", false],
      ["consume", true],
    ] as const) {
      const { calls, claims } = recording(fail);
      const ctx = holding();
      await expect(settleClaim(ctx, claims, success)).resolves.toBeUndefined();
      expect(calls).toEqual([`${fail} c/k`]);
      expect(ctx.claim).toBeUndefined();
    }
  });
});
