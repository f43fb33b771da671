/**
 * Request and response transforms on a proxy (spec 2.10, 4.10): create, list, get, partial
 * update, delete, and the saving of their code. docs/transforms.md is the reference.
 *
 * - Code is prepared before anything is written (transforms/code.ts: TypeScript to JavaScript,
 *   AST rules); a refusal is a 400 `{message: "Transform code failed validation", errors}` and
 *   nothing changes (a PUT with invalid code keeps the old code).
 * - The item, its code chunks and the proxy's count are written in one transaction, so a reader
 *   never sees a transform without its code, and a delete removes both at once.
 * - The number of transforms of each kind per proxy (MAX_TRANSFORMS_PER_PROXY) is exact under
 *   concurrency: a count item, incremented in the create transaction under a condition.
 * - A transform is proxy configuration: every change bumps the client's `configVersion` in the
 *   proxy's region after it commits.
 */
import { randomUUID } from "node:crypto";
import { lostRace, RACE_ATTEMPTS, tryCommitRegional } from "#lib/db/commit.ts";
import { checkProxyStep } from "#lib/db/entities/meter.ts";
import {
  type CodeBundle,
  countTransformStep,
  deleteChunkStep,
  deleteTransformStep,
  findTransform,
  findTransformWithCode,
  listTransformsOfProxy,
  putChunkStep,
  putTransformStep,
  replaceTransformStep,
  storedCode,
  TRANSFORM_STEPS,
  type TransformItem,
  transformKeys,
  uncountTransformStep,
} from "#lib/db/entities/transform.ts";
import { cancelledSteps, nowIso, type TransactionStep } from "#lib/db/store.ts";
import { prepareTransformCode, TRANSFORM_CODE_MESSAGE } from "#lib/domain/transforms/code.ts";
import {
  type CreateTransformInput,
  MAX_TRANSFORMS_PER_PROXY,
  mergeTransformUpdate,
  normaliseTransform,
  type TransformKind,
  transformConfigOf,
  transformConfigProblems,
  type UpdateTransformInput,
} from "#lib/domain/transforms/schema.ts";
import { log } from "#lib/log.ts";
import { badRequest, conflict, notFound, validationFailed } from "#lib/shared/errors.ts";
import type { ClientAccess } from "./access.ts";
import { PROXY_NOT_FOUND, requireProxy } from "./proxies.ts";

export const TRANSFORM_NOT_FOUND = "Transform not found";
export const tooManyTransforms = (kind: TransformKind) =>
  `A proxy can have at most ${MAX_TRANSFORMS_PER_PROXY} ${kind} transforms; delete one first`;

const ATTEMPTS = RACE_ATTEMPTS;

/** The transform as the API shows it: pKey the proxy id, sKey the transform id; code only when given. */
export function toApiTransform(transform: TransformItem, code?: CodeBundle) {
  const {
    entity: _entity,
    transformKind: _kind,
    transformVersion: _version,
    codeVersion: _codeVersion,
    codeGzip: _codeGzip,
    codeChunks: _codeChunks,
    codeBytes: _codeBytes,
    ...fields
  } = transform;
  return {
    ...fields,
    pKey: transform.proxyId,
    sKey: transform.transformId,
    ...(code ? { code: code.source } : {}),
  };
}

/** The code to store, or the 400 naming each problem (nothing is written). */
function compiled(source: string): CodeBundle {
  const prepared = prepareTransformCode(source);
  if (!prepared.ok) throw badRequest(TRANSFORM_CODE_MESSAGE, { errors: prepared.errors });
  return prepared.javascript === source ? { source } : { source, javascript: prepared.javascript };
}

const concurrently = () => conflict("The transforms of this proxy are being changed concurrently; retry");

export async function listTransforms({ clientId }: ClientAccess, kind: TransformKind, proxyId: string) {
  const { region } = await requireProxy(clientId, proxyId);
  return (await listTransformsOfProxy(region, clientId, kind, proxyId)).map((t) => toApiTransform(t));
}

export async function getTransform(
  { clientId }: ClientAccess,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
) {
  const { region } = await requireProxy(clientId, proxyId);
  const found = await findTransformWithCode(region, clientId, kind, proxyId, transformId);
  if (!found) throw notFound(TRANSFORM_NOT_FOUND);
  return toApiTransform(found.transform, found.code);
}

/**
 * Create a transform from a validated body: its code prepared first (400 when refused), then one
 * transaction: the proxy exists and is not being deleted, the count is below the bound, the item
 * and its code chunks are written.
 */
export async function createTransform(
  { clientId, userId }: ClientAccess,
  kind: TransformKind,
  proxyId: string,
  input: CreateTransformInput,
) {
  const { region } = await requireProxy(clientId, proxyId);
  const code = compiled(input.code);
  const transformId = randomUUID();
  const now = nowIso();
  const stored = storedCode(clientId, kind, proxyId, transformId, 1, code);
  const transform: TransformItem = {
    ...transformKeys.item(clientId, kind, proxyId, transformId),
    entity: "transform",
    transformKind: kind,
    transformId,
    proxyId,
    clientId,
    userId,
    parentId: proxyId,
    transformRegion: region,
    ...normaliseTransform(kind, input),
    createdAt: now,
    updatedAt: now,
    transformVersion: 1,
    ...stored.fields,
  };
  const steps = [
    checkProxyStep(clientId, proxyId),
    countTransformStep(clientId, kind, proxyId),
    putTransformStep(transform),
    ...stored.chunks.map(putChunkStep),
  ];
  for (let attempt = 1; ; attempt++) {
    const written = await tryCommitRegional(region, clientId, steps, (failed) =>
      failed.includes(TRANSFORM_STEPS.checkProxy)
        ? notFound(PROXY_NOT_FOUND)
        : failed.includes(TRANSFORM_STEPS.count)
          ? badRequest(tooManyTransforms(kind))
          : undefined,
    );
    if (written) break;
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
  return toApiTransform(transform, code);
}

/**
 * Partial update: given fields replace the stored ones (null clears), the merged configuration is
 * validated as a whole; `code`, when given, is prepared first and replaces the stored code (its
 * chunks rewritten, extra old chunks deleted) in the same transaction as the item.
 */
export async function updateTransform(
  { clientId }: ClientAccess,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
  input: UpdateTransformInput,
) {
  const { region } = await requireProxy(clientId, proxyId);
  const newCode = input.code === undefined ? undefined : compiled(input.code);
  for (let attempt = 1; ; attempt++) {
    const current = await findTransformWithCode(region, clientId, kind, proxyId, transformId);
    if (!current) throw notFound(TRANSFORM_NOT_FOUND);
    const config = mergeTransformUpdate(
      transformConfigOf(current.transform.transformKind, current.transform),
      input,
    );
    const problems = transformConfigProblems(config);
    if (problems.length > 0) throw validationFailed(problems);
    const { transform: seen } = current;
    let next: TransformItem = {
      ...seen,
      ...config,
      updatedAt: nowIso(),
      transformVersion: seen.transformVersion + 1,
    };
    const codeSteps: TransactionStep[] = [];
    if (newCode) {
      const stored = storedCode(clientId, kind, proxyId, transformId, seen.codeVersion + 1, newCode);
      const { codeGzip: _old, ...rest } = next;
      next = { ...rest, ...stored.fields };
      codeSteps.push(...stored.chunks.map(putChunkStep));
      for (let part = stored.chunks.length; part < seen.codeChunks; part++)
        codeSteps.push(deleteChunkStep(clientId, kind, proxyId, transformId, part));
    }
    const steps = [
      checkProxyStep(clientId, proxyId),
      replaceTransformStep(next, seen.transformVersion),
      ...codeSteps,
    ];
    const written = await tryCommitRegional(region, clientId, steps, (failed) =>
      failed.includes(TRANSFORM_STEPS.checkProxy)
        ? notFound(PROXY_NOT_FOUND)
        : // Changed or deleted since read: merge again.
          failed.includes(TRANSFORM_STEPS.replace)
          ? "retry"
          : undefined,
    );
    if (written) return toApiTransform(next, newCode ?? current.code);
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
}

/** Delete a transform, its code chunks and one of the proxy's count, in one transaction. */
export async function deleteTransform(
  { clientId }: ClientAccess,
  kind: TransformKind,
  proxyId: string,
  transformId: string,
) {
  const { region } = await requireProxy(clientId, proxyId);
  for (let attempt = 1; ; attempt++) {
    const current = await findTransform(region, clientId, kind, proxyId, transformId);
    if (!current) throw notFound(TRANSFORM_NOT_FOUND);
    const chunkSteps = Array.from({ length: current.codeChunks }, (_, part) =>
      deleteChunkStep(clientId, kind, proxyId, transformId, part),
    );
    // Conditioned on the version read, so the chunks deleted are the ones it has.
    const guard = deleteTransformStep(clientId, kind, proxyId, transformId, current.transformVersion);
    const steps = [guard, uncountTransformStep(clientId, kind, proxyId), ...chunkSteps];
    let written: boolean;
    try {
      written = await tryCommitRegional(region, clientId, steps);
    } catch (error) {
      const failed = cancelledSteps(error, steps)?.failed ?? [];
      if (failed.includes(TRANSFORM_STEPS.delete)) {
        written = false; // changed or deleted since read: read again
      } else if (failed.includes(TRANSFORM_STEPS.uncount)) {
        log.warn("Transform count of a proxy was 0 with a transform present", {
          clientId,
          proxyId,
          transformId,
        });
        written = await tryCommitRegional(region, clientId, [guard, ...chunkSteps]);
      } else throw error;
    }
    if (written) break;
    if (attempt >= ATTEMPTS) throw concurrently();
    await lostRace(attempt);
  }
}
