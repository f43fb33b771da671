/**
 * The operation registry: every Core API operation, declared once in lib/api/operations/ (one
 * module per resource group). Everything that lists operations is derived from this array.
 */
import type { Operation } from "./operation.ts";
import { docsOperations } from "./operations/docs.ts";
import { proxyOperations } from "./operations/proxies.ts";

export const OPERATIONS: readonly Operation[] = [...proxyOperations, ...docsOperations];
