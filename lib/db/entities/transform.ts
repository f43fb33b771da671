/**
 * The transform entity (spec 2.10), its stored code and the count of a proxy's transforms of one
 * kind: item schemas, keys and the access patterns that read them (docs/access-patterns.md,
 * docs/transforms.md "Storage").
 *
 * A transform lives beside its proxy in the proxy's region, in the client partition:
 * `TRANSFORM#REQUEST#<proxyId>#<transformId>` (or `TRANSFORM#RESPONSE#...`). Its code (the user's
 * source and the JavaScript compiled from it) is stored gzipped: inline on the item when the
 * compressed code is at most CODE_CHUNK_CHARS, else in chunk items
 * `<transform sKey>#CODE#<n>` (n from 0) written in the same transaction as the item. The count
 * (`TRANSFORM#<KIND>#<proxyId>##COUNT`) and the chunks sort under the proxy's prefix, so the proxy
 * cascade deletes them with the transforms.
 *
 * zod/mini over zod-free constants: the data plane's cold start reads this module.
 */
import { gunzipSync, gzipSync } from "node:zlib";
import * as z from "zod/mini";
import { keys, REGIONAL_SK } from "#lib/db/keys.ts";
import { getInRegion } from "#lib/db/regional.ts";
import { parseStored, queryPartition, type TransactionStep, tableName } from "#lib/db/store.ts";
import type { TransformConfig } from "#lib/domain/transforms/schema.ts";
import { PREDICATE_PRESENCES } from "#lib/shared/predicate-constants.ts";
import {
  MAX_TRANSFORMS_PER_PROXY,
  STATUS_OPERATORS,
  TRANSFORM_EFFECTS,
  TRANSFORM_KINDS,
  TRANSFORM_MODES,
  type TransformKind,
} from "#lib/shared/transform-constants.ts";
import { StoredPredicateFields } from "./meter.ts";

/**
 * Largest stored code (gzip, then base64) kept on the transform item, in characters; above it the
 * code is split in chunk items of this size. Base64 strings rather than DynamoDB binary: the
 * local emulator (moto) fails TransactWriteItems holding binary attributes.
 */
export const CODE_CHUNK_CHARS = 300_000;

const Presence = z.enum(PREDICATE_PRESENCES);
const Pattern = z.optional(z.string());

export const StoredResponseHeader = z.object({ name: z.string(), pattern: Pattern, presence: Presence });
export const StoredResponseBody = z.object({ path: z.string(), pattern: Pattern, presence: Presence });
export const StoredStatus = z.object({ operator: z.enum(STATUS_OPERATORS), value: z.number() });

/** Response transforms only: absent on request transforms. */
export const StoredResponsePredicateFields = {
  responseHeaders: z.optional(z.array(StoredResponseHeader)),
  responseBody: z.optional(z.array(StoredResponseBody)),
  responseStatus: z.optional(z.array(StoredStatus)),
};

export const TransformItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("transform"),
  transformKind: z.enum(TRANSFORM_KINDS),
  transformId: z.string(),
  proxyId: z.string(),
  clientId: z.string(),
  userId: z.string(),
  parentId: z.string(),
  transformRegion: z.string(),
  transformMode: z.enum(TRANSFORM_MODES),
  effect: z.nullable(z.enum(TRANSFORM_EFFECTS)),
  transformActive: z.boolean(),
  priority: z.number(),
  ...StoredPredicateFields,
  ...StoredResponsePredicateFields,
  notes: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** Bumped by every update: a PUT is conditioned on the version it merged into. */
  transformVersion: z.int(),
  /** Bumped when the code changes; each chunk carries the code version it belongs to. */
  codeVersion: z.int(),
  /** UTF-8 bytes of the user's source. */
  codeBytes: z.int(),
  /** The code (CodeBundle as JSON, gzipped, base64) when it fits the item; absent when chunked. */
  codeGzip: z.optional(z.string()),
  /** Number of chunk items holding the gzipped code (0: inline). */
  codeChunks: z.int(),
});
export type TransformItem = z.infer<typeof TransformItem>;

// The stored item holds exactly the canonical configuration: a drift between the two fails to compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const storedIsCanonical: Same<Pick<TransformItem, keyof TransformConfig>, TransformConfig> = true;
void storedIsCanonical;

export const TransformCodeChunkItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("transform-code"),
  transformId: z.string(),
  codeVersion: z.int(),
  part: z.int(),
  data: z.string(),
});
export type TransformCodeChunkItem = z.infer<typeof TransformCodeChunkItem>;

export const TransformCountItem = z.object({
  pKey: z.string(),
  sKey: z.string(),
  entity: z.literal("transform-count"),
  clientId: z.string(),
  proxyId: z.string(),
  transformCount: z.int().check(z.nonnegative()),
});

/** The stored code: the user's source, and the JavaScript to run when it differs (TypeScript). */
export interface CodeBundle {
  source: string;
  javascript?: string;
}

export const transformItemOf = (item: Record<string, unknown>): TransformItem =>
  parseStored(TransformItem, "transform", item);
const chunkItemOf = (item: Record<string, unknown>): TransformCodeChunkItem =>
  parseStored(TransformCodeChunkItem, "transform code chunk", item);

export const transformKeys = {
  item: keys.transform,
  count: keys.transformCount,
  chunk: (clientId: string, kind: TransformKind, proxyId: string, transformId: string, part: number) => {
    const key = keys.transform(clientId, kind, proxyId, transformId);
    return { pKey: key.pKey, sKey: `${key.sKey}#CODE#${part}` };
  },
} as const;

const prefixOf = (kind: TransformKind, proxyId: string) =>
  `${kind === "request" ? REGIONAL_SK.requestTransformPrefix : REGIONAL_SK.responseTransformPrefix}${proxyId}#`;

/** The code as stored: JSON, gzipped, base64; inline or split in chunks of CODE_CHUNK_CHARS. */
export function encodeCode(bundle: CodeBundle): { inline?: string; chunks: string[] } {
  const stored = gzipSync(JSON.stringify(bundle), { level: 9 }).toString("base64");
  if (stored.length <= CODE_CHUNK_CHARS) return { inline: stored, chunks: [] };
  const chunks: string[] = [];
  for (let at = 0; at < stored.length; at += CODE_CHUNK_CHARS)
    chunks.push(stored.slice(at, at + CODE_CHUNK_CHARS));
  return { chunks };
}

export function decodeCode(parts: readonly string[]): CodeBundle {
  const bundle = JSON.parse(gunzipSync(Buffer.from(parts.join(""), "base64")).toString("utf8")) as CodeBundle;
  if (typeof bundle.source !== "string") throw new Error("Stored transform code has no source");
  return bundle;
}

/**
 * Access pattern "transforms of a proxy" (one kind): one Query on the client partition in the
 * proxy's region, `begins_with(sKey, TRANSFORM#<KIND>#<proxyId>#)`, bounded (at most
 * MAX_TRANSFORMS_PER_PROXY transforms, their chunks and the count); the count and chunks are left
 * out. Oldest first.
 */
export async function listTransformsOfProxy(
  region: string,
  clientId: string,
  kind: TransformKind,
  proxyId: string,
): Promise<TransformItem[]> {
  const items = await queryPartition(keys.clientPartition(clientId), {
    region,
    sKeyPrefix: prefixOf(kind, proxyId),
    max: MAX_TRANSFORMS_PER_PROXY * 6 + 1,
  });
  return items
    .filter((item) => item.entity === "transform")
    .map(transformItemOf)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.transformId.localeCompare(b.transformId));
}

/** A transform by id (GetItem in the proxy's region), without its code; undefined when there is none. */
export async function findTransform(
  region: string,
  clientId: string,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
): Promise<TransformItem | undefined> {
  const item = await getInRegion(region, transformKeys.item(clientId, kind, proxyId, transformId));
  return item?.entity === "transform" ? transformItemOf(item) : undefined;
}

/**
 * A transform with its code: one strongly consistent Query, `begins_with(sKey, <transform sKey>)`
 * (the item and its chunks). A write between the pages of the Query shows as chunks of another
 * code version: read again.
 */
export async function findTransformWithCode(
  region: string,
  clientId: string,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
): Promise<{ transform: TransformItem; code: CodeBundle } | undefined> {
  const key = transformKeys.item(clientId, kind, proxyId, transformId);
  for (let attempt = 1; ; attempt++) {
    const items = await queryPartition(key.pKey, { region, sKeyPrefix: key.sKey, max: 20 });
    const head = items.find((item) => item.sKey === key.sKey && item.entity === "transform");
    if (!head) return undefined;
    const transform = transformItemOf(head);
    if (transform.codeGzip) return { transform, code: decodeCode([transform.codeGzip]) };
    const chunks = items
      .filter((item) => item.entity === "transform-code")
      .map(chunkItemOf)
      .filter((chunk) => chunk.codeVersion === transform.codeVersion && chunk.part < transform.codeChunks)
      .sort((a, b) => a.part - b.part);
    if (chunks.length === transform.codeChunks)
      return { transform, code: decodeCode(chunks.map((c) => c.data)) };
    if (attempt >= 3) throw new Error(`Stored transform ${transformId} is missing code chunks`);
  }
}

/**
 * Access pattern "active transforms of a proxy with their code" (one kind; the data plane's
 * configuration load): one strongly consistent Query, `begins_with(sKey, TRANSFORM#<KIND>#<proxyId>#)`,
 * paged and bounded as the list (at most MAX_TRANSFORMS_PER_PROXY transforms, their chunks and the
 * count), oldest first. The code of each active transform is decoded once here; inactive ones are
 * returned without decoding (`code` undefined). Chunks of another code version (a write between
 * the Query's pages) make it read again, at most three times.
 */
export async function listTransformsWithCode(
  region: string,
  clientId: string,
  kind: TransformKind,
  proxyId: string,
): Promise<{ transform: TransformItem; code?: CodeBundle }[]> {
  for (let attempt = 1; ; attempt++) {
    const items = await queryPartition(keys.clientPartition(clientId), {
      region,
      sKeyPrefix: prefixOf(kind, proxyId),
      max: MAX_TRANSFORMS_PER_PROXY * 6 + 1,
    });
    const chunks = new Map<string, TransformCodeChunkItem[]>();
    for (const item of items) {
      if (item.entity !== "transform-code") continue;
      const chunk = chunkItemOf(item);
      const key = `${chunk.transformId}#${chunk.codeVersion}`;
      chunks.set(key, [...(chunks.get(key) ?? []), chunk]);
    }
    const transforms = items
      .filter((item) => item.entity === "transform")
      .map(transformItemOf)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.transformId.localeCompare(b.transformId));
    let complete = true;
    const loaded = transforms.map((transform) => {
      if (!transform.transformActive) return { transform };
      if (transform.codeGzip) return { transform, code: decodeCode([transform.codeGzip]) };
      const parts = (chunks.get(`${transform.transformId}#${transform.codeVersion}`) ?? [])
        .filter((chunk) => chunk.part < transform.codeChunks)
        .sort((a, b) => a.part - b.part);
      if (parts.length !== transform.codeChunks) {
        complete = false;
        return { transform };
      }
      return { transform, code: decodeCode(parts.map((chunk) => chunk.data)) };
    });
    if (complete) return loaded;
    if (attempt >= 3) throw new Error(`Stored transforms of proxy ${proxyId} are missing code chunks`);
  }
}

// ---- the steps of the transform transactions (lib/domain/transforms.ts composes them)

export const TRANSFORM_STEPS = {
  checkProxy: "check proxy",
  count: "count transforms",
  put: "write transform",
  replace: "replace transform",
  delete: "delete transform",
  uncount: "uncount transform",
  putChunk: "write code chunk",
  deleteChunk: "delete code chunk",
} as const;

export const countTransformStep = (
  clientId: string,
  kind: TransformKind,
  proxyId: string,
): TransactionStep => ({
  name: TRANSFORM_STEPS.count,
  action: {
    Update: {
      TableName: tableName(),
      Key: transformKeys.count(clientId, kind, proxyId),
      UpdateExpression:
        "SET entity = :entity, clientId = :clientId, proxyId = :proxyId ADD transformCount :one",
      ConditionExpression: "attribute_not_exists(transformCount) OR transformCount < :max",
      ExpressionAttributeValues: {
        ":entity": "transform-count",
        ":clientId": clientId,
        ":proxyId": proxyId,
        ":one": 1,
        ":max": MAX_TRANSFORMS_PER_PROXY,
      },
    },
  },
});

export const uncountTransformStep = (
  clientId: string,
  kind: TransformKind,
  proxyId: string,
): TransactionStep => ({
  name: TRANSFORM_STEPS.uncount,
  action: {
    Update: {
      TableName: tableName(),
      Key: transformKeys.count(clientId, kind, proxyId),
      UpdateExpression: "ADD transformCount :minusOne",
      ConditionExpression: "transformCount > :zero",
      ExpressionAttributeValues: { ":minusOne": -1, ":zero": 0 },
    },
  },
});

export const putTransformStep = (transform: TransformItem): TransactionStep => ({
  name: TRANSFORM_STEPS.put,
  action: {
    Put: { TableName: tableName(), Item: transform, ConditionExpression: "attribute_not_exists(pKey)" },
  },
});

export const replaceTransformStep = (transform: TransformItem, seenVersion: number): TransactionStep => ({
  name: TRANSFORM_STEPS.replace,
  action: {
    Put: {
      TableName: tableName(),
      Item: transform,
      ConditionExpression: "entity = :transform AND transformVersion = :seen",
      ExpressionAttributeValues: { ":transform": "transform", ":seen": seenVersion },
    },
  },
});

/** Delete a transform (only a transform), if it is still the version read: its chunks are deleted with it. */
export const deleteTransformStep = (
  clientId: string,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
  seenVersion: number,
): TransactionStep => ({
  name: TRANSFORM_STEPS.delete,
  action: {
    Delete: {
      TableName: tableName(),
      Key: transformKeys.item(clientId, kind, proxyId, transformId),
      ConditionExpression: "entity = :transform AND transformVersion = :seen",
      ExpressionAttributeValues: { ":transform": "transform", ":seen": seenVersion },
    },
  },
});

export const putChunkStep = (chunk: TransformCodeChunkItem): TransactionStep => ({
  name: TRANSFORM_STEPS.putChunk,
  action: { Put: { TableName: tableName(), Item: chunk } },
});

export const deleteChunkStep = (
  clientId: string,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
  part: number,
): TransactionStep => ({
  name: TRANSFORM_STEPS.deleteChunk,
  action: {
    Delete: { TableName: tableName(), Key: transformKeys.chunk(clientId, kind, proxyId, transformId, part) },
  },
});

/** A transform's stored code fields and chunk items for a code bundle (at code version `codeVersion`). */
export function storedCode(
  clientId: string,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
  codeVersion: number,
  bundle: CodeBundle,
): {
  fields: Pick<TransformItem, "codeGzip" | "codeChunks" | "codeBytes" | "codeVersion">;
  chunks: TransformCodeChunkItem[];
} {
  const { inline, chunks } = encodeCode(bundle);
  return {
    fields: {
      ...(inline ? { codeGzip: inline } : {}),
      codeChunks: chunks.length,
      codeBytes: Buffer.byteLength(bundle.source, "utf8"),
      codeVersion,
    },
    chunks: chunks.map((data, part) => ({
      ...transformKeys.chunk(clientId, kind, proxyId, transformId, part),
      entity: "transform-code",
      transformId,
      codeVersion,
      part,
      data,
    })),
  };
}
