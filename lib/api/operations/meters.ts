/** Meters on a proxy (spec 2.9, 4.9): count requests or response values per window, with limits and alerts. */
import { z } from "zod";
import { access, MessageResponse, operation, pathParams, wrapped } from "#lib/api/operation.ts";
import { MeterItem } from "#lib/db/entities/meter.ts";
import {
  CreateMeterBody,
  LIMIT_BY_WARNING,
  MAX_METERS_PER_PROXY,
  UpdateMeterBody,
} from "#lib/domain/meter-schema.ts";
import {
  createMeter,
  deleteMeter,
  getMeter,
  getMeterUsage,
  listMeters,
  updateMeter,
} from "#lib/domain/meters.ts";
import { METER_WINDOWS } from "#lib/shared/meter-windows.ts";

const {
  entity: _entity,
  meterVersion: _meterVersion,
  valueMean: _valueMean,
  ...meterFields
} = MeterItem.shape;

/** A meter as the API shows it (spec 2.9): the stored fields without internals, pKey/sKey the proxy and meter ids. */
export const MeterSchema = z.object({
  ...meterFields,
  pKey: z.string().describe("The proxy id"),
  sKey: z.string().describe("The meter id"),
  parentId: z.string().describe("The proxy id"),
  userId: z.string().describe("The user who created the meter"),
  meterRegion: z.string().describe("The proxy's region"),
  limitBy: z
    .string()
    .nullable()
    .describe(
      `Per-caller limits: the name of one of the meter's variables (null: one shared count). ${LIMIT_BY_WARNING}`,
    ),
});

/** A meter's usage now (getMeterUsage): each calendar window's value against its limit. */
export const MeterUsageSchema = z.object({
  meterId: z.string(),
  limitBy: z.string().nullable().describe("The meter's limitBy variable (null: one shared count)"),
  limitByValue: z
    .string()
    .nullable()
    .describe('Whose counts these are, for a per-caller meter ("": requests without a value)'),
  usage: z.array(
    z.object({
      window: z.enum(METER_WINDOWS),
      windowStart: z.string().describe("ISO 8601, the current window's start (UTC)"),
      windowEnd: z.string().describe("ISO 8601, exclusive"),
      value: z.number().describe("The value counted in the window so far"),
      limit: z.number().nullable().describe("The window's limit; null: no limit"),
    }),
  ),
});

const UsageQuery = z.object({
  limitByValue: z
    .string()
    .max(1024)
    .optional()
    .describe('For a per-caller meter (limitBy): the variable\'s value whose counts to read (default "")'),
});

const base = "/api/clients/{clientId}/proxies/{proxyId}/meters";
const ProxyParams = pathParams("clientId", "proxyId");
const MeterParams = pathParams("clientId", "proxyId", "meterId");
const VALIDATION =
  "400 names each failing field (docs/meters.md: meterType, meterActive, extraction, limits, alerts, effect of a conditional meter, limitBy).";

export const meterOperations = [
  operation({
    id: "listMeters",
    method: "GET",
    path: base,
    group: "meters",
    summary: "List a proxy's meters",
    description: `Lists the meters of a proxy, oldest first (at most ${MAX_METERS_PER_PROXY}, so not paged).`,
    access: access.client("reader"),
    effect: "read",
    params: ProxyParams,
    response: { status: 200, schema: wrapped("meters", MeterSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: { message: "Meters retrieved", meters: await listMeters(member, params.proxyId) },
    }),
  }),
  operation({
    id: "createMeter",
    method: "POST",
    path: base,
    group: "meters",
    summary: "Create a meter on a proxy",
    description: `Adds a meter to a proxy: \`meterType\` (request_count or response_value, then \`extraction\` says where the value is) and \`meterActive\` are required. Optional: \`limits\` per window (minute, hour, day, month; exceeding one gives callers 429), \`meterMode\` (all, default, or conditional with \`effect\` include/exclude over the predicates methods, path, query, headers, body, token), \`variables\` and \`limitBy\` (count and limit per value of one variable), \`alerts\` and \`notes\`. ${LIMIT_BY_WARNING} At most ${MAX_METERS_PER_PROXY} meters per proxy (400). Takes effect on the next request. ${VALIDATION}`,
    access: access.client("devops"),
    effect: "write",
    params: ProxyParams,
    body: CreateMeterBody,
    response: { status: 201, schema: wrapped("meters", MeterSchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => ({
      status: 201,
      body: { message: "Meter created", meters: [await createMeter(member, params.proxyId, body)] },
    }),
  }),
  operation({
    id: "getMeter",
    method: "GET",
    path: `${base}/{meterId}`,
    group: "meters",
    summary: "Get a meter",
    description: "Answers one meter of the proxy.",
    access: access.client("reader"),
    effect: "read",
    params: MeterParams,
    response: { status: 200, schema: wrapped("meters", MeterSchema) },
    errors: [403, 404],
    handler: async ({ member, params }) => ({
      body: {
        message: "Meter retrieved",
        meters: [await getMeter(member, params.proxyId, params.meterId)],
      },
    }),
  }),
  operation({
    id: "getMeterUsage",
    method: "GET",
    path: `${base}/{meterId}/usage`,
    group: "meters",
    summary: "Get a meter's current usage",
    description:
      "The meter's value in the current window of each kind it counts (fixed UTC calendar windows: minute, hour, day, month; a meter counts the windows with a limit or an alert threshold, all four when it has neither), each with its limit (null: none): what the data plane counted so far. A per-caller meter (`limitBy`) counts per value of its variable; `limitByValue` chooses whose counts (default: requests without a value). A `response_value` meter's value is the settled one (reservations of requests in flight are not in it).",
    access: access.client("reader"),
    effect: "read",
    params: MeterParams,
    query: UsageQuery,
    response: { status: 200, schema: MessageResponse.extend(MeterUsageSchema.shape) },
    errors: [403, 404],
    handler: async ({ member, params, query }) => ({
      body: {
        message: "Meter usage retrieved",
        ...(await getMeterUsage(member, params.proxyId, params.meterId, query.limitByValue)),
      },
    }),
  }),
  operation({
    id: "updateMeter",
    method: "PUT",
    path: `${base}/{meterId}`,
    group: "meters",
    summary: "Update a meter",
    description: `Partial update: the fields given replace the stored ones (\`limits\`, \`extraction\` and \`alerts\` as a whole), \`null\` clears an optional field, omitted fields keep their values. The merged meter is validated as a whole (switching to response_value needs an extraction). Answers the whole meter. Takes effect on the next request. ${LIMIT_BY_WARNING} ${VALIDATION}`,
    access: access.client("devops"),
    effect: "write",
    params: MeterParams,
    body: UpdateMeterBody,
    response: { status: 200, schema: wrapped("meters", MeterSchema) },
    errors: [403, 404, 409],
    handler: async ({ member, params, body }) => ({
      body: {
        message: "Meter updated",
        meters: [await updateMeter(member, params.proxyId, params.meterId, body)],
      },
    }),
  }),
  operation({
    id: "deleteMeter",
    method: "DELETE",
    path: `${base}/{meterId}`,
    group: "meters",
    summary: "Delete a meter",
    description:
      "Deletes the meter at once, with its counts; from the next request on it neither counts nor limits. Answers `{message}` (the spec does not show the body).",
    access: access.client("devops"),
    effect: "delete",
    params: MeterParams,
    response: { status: 200, schema: MessageResponse },
    errors: [403, 404, 409],
    handler: async ({ member, params }) => {
      await deleteMeter(member, params.proxyId, params.meterId);
      return { body: { message: "Meter deleted" } };
    },
  }),
];
