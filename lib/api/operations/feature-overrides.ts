/**
 * A client's feature and promotion overrides, for system administrators (group `clients`; issue 24,
 * docs/billing.md "Overrides"). The known values are declared in lib/domain/feature-overrides.ts.
 */
import { z } from "zod";
import { access, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import {
  FEATURE_OVERRIDES,
  getClientOverrides,
  MAX_OVERRIDES,
  PROMO_OVERRIDES,
  setClientOverrides,
  UpdateOverridesBody,
} from "#lib/domain/feature-overrides.ts";

const ClientParams = pathParams("clientId");
const PATH = "/api/clients/{clientId}/feature-overrides";

const known = (values: Record<string, string>) =>
  Object.entries(values)
    .map(([value, meaning]) => `\`${value}\`: ${meaning}`)
    .join(" ");

export const ClientOverridesSchema = z.object({
  clientId: z.string(),
  featureOverrides: z.array(z.string()).describe(known(FEATURE_OVERRIDES)),
  promoOverrides: z.array(z.string()).describe(known(PROMO_OVERRIDES)),
  configUpdated: z.string(),
});

const EXAMPLE = {
  clientId: "5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
  featureOverrides: ["core_api_rate_limit_x10"],
  promoOverrides: [],
  configUpdated: "2026-11-27T05:30:00.000Z",
};

export const featureOverrideOperations = [
  operation({
    id: "getClientFeatureOverrides",
    method: "GET",
    path: PATH,
    group: "clients",
    summary: "Get a client's feature and promo overrides (system administrators)",
    description:
      "Answers the client's `featureOverrides` and `promoOverrides` (docs/billing.md \"Overrides\"). Every member reads them on the client's billing (`GET /api/clients/{clientId}/billing`). System administrators only.",
    access: access.systemAdmin,
    effect: "read",
    params: ClientParams,
    response: { status: 200, schema: wrapped("featureOverrides", ClientOverridesSchema) },
    errors: [403, 404],
    documentation: {
      examples: { response: { message: "Overrides retrieved", featureOverrides: [EXAMPLE] } },
    },
    handler: async ({ params }) => ({
      body: { message: "Overrides retrieved", featureOverrides: [await getClientOverrides(params.clientId)] },
    }),
  }),
  operation({
    id: "updateClientFeatureOverrides",
    method: "PUT",
    path: PATH,
    group: "clients",
    summary: "Set a client's feature and promo overrides (system administrators)",
    description: `Each list given replaces the stored one (\`[]\` clears it; an omitted one stays): at most ${MAX_OVERRIDES} known values, none repeated; an unknown value is a 400 naming the field. Known feature overrides: ${known(FEATURE_OVERRIDES)} Known promo overrides: ${known(PROMO_OVERRIDES)} Takes effect on the next Core API request. System administrators only.`,
    access: access.systemAdmin,
    effect: "write",
    params: ClientParams,
    body: UpdateOverridesBody,
    response: { status: 200, schema: wrapped("featureOverrides", ClientOverridesSchema) },
    errors: [403, 404],
    documentation: {
      examples: {
        body: { featureOverrides: ["core_api_rate_limit_x10"] },
        response: { message: "Overrides updated", featureOverrides: [EXAMPLE] },
      },
    },
    handler: async ({ params, body }) => ({
      body: {
        message: "Overrides updated",
        featureOverrides: [await setClientOverrides(params.clientId, body)],
      },
    }),
  }),
];
