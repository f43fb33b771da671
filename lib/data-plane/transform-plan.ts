/**
 * A proxy's transforms as the data plane holds them (docs/transforms.md "Running"): loaded with the
 * proxy's configuration, their predicates and code compiled once per load, and the selection of
 * the one transform of each kind that runs for a request.
 *
 * Loaded on demand (import() from runtime-config.ts) only when the proxy's transform counts say it
 * has any; the sandbox (QuickJS, its own chunk) is imported only when an active transform is
 * compiled.
 */
import { listTransformsWithCode, type TransformItem } from "#lib/db/entities/transform.ts";
import {
  type BoundVariables,
  bindVariables,
  type CompiledPredicates,
  compilePredicates,
  type PreparedPredicateRequest,
  predicatesOutcome,
} from "#lib/domain/predicates/evaluate.ts";
import { loadRuleEngine } from "#lib/domain/rules/regex.ts";
import {
  allHold,
  selectionOrder,
  selectTransform,
  statusHolds,
  transformApplies,
} from "#lib/domain/transforms/select.ts";
import type { TransformKind } from "#lib/shared/transform-constants.ts";
import type { CompiledTransform } from "./sandbox.ts";

export interface LoadedTransform {
  transformId: string;
  kind: TransformKind;
  priority: number;
  createdAt: string;
  transformActive: true;
  mode: TransformItem["transformMode"];
  effect: TransformItem["effect"];
  /** The request predicates (both kinds). */
  request: CompiledPredicates;
  /** `responseHeaders` and `responseBody`, evaluated on the target's answer (response kind). */
  response: CompiledPredicates;
  responseStatus: NonNullable<TransformItem["responseStatus"]>;
  variables: TransformItem["variables"];
  compiled: CompiledTransform;
}

/** The active transforms of a proxy, each kind in selection order. */
export interface RuntimeTransforms {
  request: LoadedTransform[];
  response: LoadedTransform[];
}

const hasPattern = (item: TransformItem): boolean =>
  item.transformMode === "conditional" &&
  (item.path !== null ||
    [
      ...item.query,
      ...item.headers,
      ...item.body,
      ...item.token,
      ...(item.responseHeaders ?? []),
      ...(item.responseBody ?? []),
    ].some((check) => typeof check.pattern === "string"));

/**
 * The proxy's active transforms of the kinds it has (`kinds`: from the count items), with their
 * code compiled (one sandbox context each). Undefined when none is active.
 */
export async function loadTransforms(
  region: string,
  clientId: string,
  proxyId: string,
  kinds: readonly TransformKind[],
): Promise<RuntimeTransforms | undefined> {
  const listed = await Promise.all(
    kinds.map((kind) => listTransformsWithCode(region, clientId, kind, proxyId)),
  );
  const active = listed
    .flat()
    .flatMap(({ transform, code }) => (transform.transformActive && code ? [{ transform, code }] : []));
  if (active.length === 0) return undefined;
  if (active.some((entry) => hasPattern(entry.transform))) await loadRuleEngine();
  const { compileTransform } = await import("./sandbox.ts");
  const loaded = await Promise.all(
    active.map(async ({ transform, code }): Promise<LoadedTransform> => {
      const javascript = code.javascript ?? code.source;
      return {
        transformId: transform.transformId,
        kind: transform.transformKind,
        priority: transform.priority,
        createdAt: transform.createdAt,
        transformActive: true,
        mode: transform.transformMode,
        effect: transform.effect,
        request: compilePredicates(transform),
        response: compilePredicates({
          headers: transform.responseHeaders ?? [],
          body: transform.responseBody ?? [],
        }),
        responseStatus: transform.responseStatus ?? [],
        variables: transform.variables,
        compiled: await compileTransform(transform.transformId, javascript),
      };
    }),
  );
  return {
    request: selectionOrder(loaded.filter((transform) => transform.kind === "request")),
    response: selectionOrder(loaded.filter((transform) => transform.kind === "response")),
  };
}

/** Frees the sandbox contexts of a replaced configuration (a request still holding it may finish). */
export async function retireTransforms(transforms: RuntimeTransforms): Promise<void> {
  const { disposeTransform } = await import("./sandbox.ts");
  for (const transform of [...transforms.request, ...transforms.response])
    disposeTransform(transform.compiled);
}

/**
 * The request transform that runs, if any: its request predicates on the caller's request (a field
 * with several values errs on applying: any value for `include`, every value for `exclude`).
 */
export function selectRequestTransform(
  transforms: readonly LoadedTransform[],
  request: PreparedPredicateRequest,
): LoadedTransform | undefined {
  return selectTransform(transforms, (transform) =>
    transformApplies(transform.mode, transform.effect, () =>
      predicatesOutcome(transform.request, request, transform.effect !== "exclude"),
    ),
  );
}

/**
 * The response transform that runs, if any: its request predicates on the caller's request, and
 * `responseHeaders`, `responseBody` and `responseStatus` on the target's answer, all together.
 */
export function selectResponseTransform(
  transforms: readonly LoadedTransform[],
  request: PreparedPredicateRequest,
  response: PreparedPredicateRequest,
  status: number,
): LoadedTransform | undefined {
  return selectTransform(transforms, (transform) =>
    transformApplies(transform.mode, transform.effect, () =>
      allHold([
        statusHolds(transform.responseStatus, status),
        predicatesOutcome(transform.request, request, transform.effect !== "exclude"),
        predicatesOutcome(transform.response, response, transform.effect !== "exclude"),
      ]),
    ),
  );
}

/** The transform's bound variables (its `variables`, bound from the caller's request). */
export const variablesOf = (transform: LoadedTransform, request: PreparedPredicateRequest): BoundVariables =>
  bindVariables(transform.variables, request);
