/**
 * The processor's price of each tier sold online (lib/domain/billing.ts priceOfTier): from
 * STRIPE_PRICE_<TIER>, read outside lib/config.ts (the data plane's cold start loads that module).
 */
import { afterEach, describe, expect, it } from "vitest";
import { priceOfTier } from "#lib/domain/billing.ts";

const NAMES = ["STRIPE_PRICE_TEAM", "STRIPE_PRICE_ENTERPRISE_BASIC"] as const;
const saved = Object.fromEntries(NAMES.map((name) => [name, process.env[name]]));
afterEach(() => {
  for (const name of NAMES)
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
});

describe("priceOfTier", () => {
  it("reads STRIPE_PRICE_<TIER>, and nothing for basic, an unset or an empty one", () => {
    process.env.STRIPE_PRICE_TEAM = "price_team";
    process.env.STRIPE_PRICE_ENTERPRISE_BASIC = "  ";
    expect(priceOfTier("team")).toBe("price_team");
    expect(priceOfTier("enterprise_basic")).toBeUndefined();
    expect(priceOfTier("enterprise_custom")).toBeUndefined();
    expect(priceOfTier("basic")).toBeUndefined();
  });
});
