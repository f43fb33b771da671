/**
 * The operation registry: every Core API operation, declared once in lib/api/operations/ (one
 * module per resource group). Everything that lists operations is derived from this array.
 */
import type { Operation } from "./operation.ts";
import { clientOperations } from "./operations/clients.ts";
import { credentialOperations } from "./operations/credentials.ts";
import { docsOperations } from "./operations/docs.ts";
import { limitOverrideOperations, proxyPolicyOperations } from "./operations/filters.ts";
import { inviteOperations } from "./operations/invites.ts";
import { memberOperations } from "./operations/members.ts";
import { meterOperations } from "./operations/meters.ts";
import { mspOperations } from "./operations/msps.ts";
import { notificationOperations } from "./operations/notifications.ts";
import { proxyOperations } from "./operations/proxies.ts";
import { requestLogOperations } from "./operations/requests.ts";
import { ruleOperations } from "./operations/rules.ts";
import { targetOperations } from "./operations/targets.ts";
import { telemetryOperations } from "./operations/telemetry.ts";
import { transformOperations } from "./operations/transforms.ts";
import { userOperations } from "./operations/users.ts";
import { webhookOperations } from "./operations/webhooks.ts";

export const OPERATIONS: readonly Operation[] = [
  ...clientOperations,
  ...memberOperations,
  ...inviteOperations,
  ...userOperations,
  ...notificationOperations,
  ...credentialOperations,
  ...targetOperations,
  ...proxyOperations,
  ...ruleOperations,
  ...meterOperations,
  ...transformOperations,
  ...proxyPolicyOperations,
  ...limitOverrideOperations,
  ...requestLogOperations,
  ...telemetryOperations,
  ...mspOperations,
  ...webhookOperations,
  ...docsOperations,
];
