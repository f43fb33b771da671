/**
 * Request bodies and queries of the MSP API (spec 4.14; docs/msp-api.md). Roles are optional in the
 * schemas: a body without them (or with none) is the spec's 400 `Roles required`, said by the
 * domain; an unknown role is a 400 naming the field.
 */
import { z } from "zod";
import { BILLING_TO, TOP_UP_METHODS } from "#lib/db/entities/client-config.ts";
import { CLIENT_ROLES, MSP_ROLES } from "#lib/shared/roles.ts";
import { ClientName } from "./schemas.ts";
import { text } from "./validation.ts";

export const CreateMspClientBody = z.object({ clientName: ClientName }).strict();
export const UpdateMspClientBody = z.object({ clientName: ClientName.optional() }).strict();

export const MspPathClientRolesBody = z
  .object({ roles: z.array(z.enum(CLIENT_ROLES)).max(CLIENT_ROLES.length).optional() })
  .strict();

const MspRolesList = z.array(z.enum(MSP_ROLES)).max(MSP_ROLES.length);
export const MspRolesBody = z.object({ roles: MspRolesList.optional() }).strict();
export const CreateMspInviteBody = z
  .object({
    userEmail: z.string().trim().toLowerCase().email("must be an email address").max(254),
    roles: MspRolesList.optional(),
  })
  .strict();

export const MspConfigurationQuery = z.object({ configurationType: z.literal("msp").optional() });

/** What an msp_admin may change on the MSP's own configuration (rates and billing are an operator's). */
export const UpdateMspConfigurationBody = z
  .object({
    promotionalCodes: z
      .array(z.object({ name: text(64), expiresAt: z.string().datetime({ offset: true }) }).strict())
      .max(50)
      .nullable()
      .optional(),
  })
  .strict();

const Rate = z.number().finite();
const Threshold = z.number().finite().min(0).max(1_000_000);
const Limit = z.number().int().positive().nullable();

/** PUT managed-client configuration (spec 4.14, all optional); budget.current is never set. */
export const UpdateClientConfigurationBody = z
  .object({
    billingTo: z.enum(BILLING_TO).optional(),
    billingType: z.literal("stripe", { message: "only stripe can be set through the MSP API" }).optional(),
    topUpMethod: z.enum(TOP_UP_METHODS).optional(),
    regionAccess: z.array(z.string().min(1).max(32)).min(1).max(32).optional(),
    rates: z
      .object({ apiSeconds: Rate, storageGB: Rate, aiTokens: Rate, plan: Rate })
      .partial()
      .strict()
      .optional(),
    budget: z
      .object({ minimumTopUpThreshold: Threshold, maximumTopUpThreshold: Threshold })
      .partial()
      .strict()
      .optional(),
    sharing: z
      .object({
        proxyCredentials: z.boolean(),
        targetCredentials: z.boolean(),
        targets: z.boolean(),
        proxies: z.boolean(),
      })
      .partial()
      .strict()
      .optional(),
    limits: z.object({ requestsPerMinute: Limit, requestsPerDay: Limit }).partial().strict().optional(),
  })
  .strict();

/** Rows of the usage report per page: up to every client an MSP may manage (1,000), so one page can hold them all. */
export const MAX_USAGE_ROWS = 1000;
export const DEFAULT_USAGE_ROWS = 100;

/** `YYYY-MM`, a calendar month (UTC), as the telemetry month buckets are keyed. */
export const MONTH_PATTERN = /^\d{4}-(0[1-9]|1[0-2])$/;

/** GET /api/msps/{mspId}/usage: `month` (required, YYYY-MM, UTC) and the page of rows. */
export const MspUsageQuery = z.object({
  month: z
    .string({ error: "required, a month as YYYY-MM" })
    .regex(MONTH_PATTERN, "must be a month as YYYY-MM")
    .describe("The calendar month (UTC), YYYY-MM"),
  page: z.coerce.number().int().min(1).max(1000).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_USAGE_ROWS).default(DEFAULT_USAGE_ROWS),
});

/** POST /api/msps/{mspId}/clients/{clientId}/top-ups: dollars, whole cents (the rest: lib/domain/msp-pricing.ts). */
export const MspTopUpBody = z
  .object({ amount: z.number({ error: "required, an amount in dollars" }).positive().max(1_000_000) })
  .strict();
