/**
 * The Core API's routes, derived from the operation registry: API Gateway's routes (the OpenAPI
 * body of the CDK stack) and the local runner's routing both come from here, so neither can
 * disagree with a Lambda's dispatch.
 */
import type { RouteDefinition } from "#lib/infra/api-manifest.ts";
import { OPERATIONS } from "./registry.ts";

export const CORE_API_ROUTES: readonly RouteDefinition[] = OPERATIONS.map((operation) => ({
  method: operation.method,
  path: operation.path,
  group: operation.group,
  ...(operation.access.kind === "public" ? { public: true } : {}),
}));
