/**
 * The Core API's routes, derived from the operation registry: API Gateway's resources and methods
 * (CDK) and the local runner's routing both come from here, so neither can disagree with a
 * Lambda's dispatch. Groups not yet moved into the registry keep their manifest entries until they
 * are (LEGACY_ROUTES in lib/infra/api-manifest.ts).
 */
import { LEGACY_ROUTES, type RouteDefinition } from "../infra/api-manifest.ts";
import { operationKey } from "./dispatch.ts";
import { OPERATIONS } from "./registry.ts";

const fromRegistry: RouteDefinition[] = OPERATIONS.map((operation) => ({
  method: operation.method,
  path: operation.path,
  group: operation.group,
  ...(operation.access.kind === "public" ? { public: true } : {}),
}));
const declared = new Set(fromRegistry.map((route) => operationKey(route.method, route.path)));

export const CORE_API_ROUTES: readonly RouteDefinition[] = [
  ...fromRegistry,
  ...LEGACY_ROUTES.filter((route) => !declared.has(operationKey(route.method, route.path))),
];
