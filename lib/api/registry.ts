/**
 * The operation registry: every Core API operation, declared once in lib/api/operations/ (one
 * module per resource group). Everything that lists operations is derived from this array.
 */

import { authOperations } from "#lib/api/operations/auth.ts";
import { clientBillingOperations, mspBillingOperations } from "#lib/api/operations/billing.ts";
import { clientOperations } from "#lib/api/operations/clients.ts";
import { credentialOperations } from "#lib/api/operations/credentials.ts";
import { docsOperations } from "#lib/api/operations/docs.ts";
import { featureOverrideOperations } from "#lib/api/operations/feature-overrides.ts";
import { limitOverrideOperations, proxyPolicyOperations } from "#lib/api/operations/filters.ts";
import { inviteOperations } from "#lib/api/operations/invites.ts";
import { memberOperations } from "#lib/api/operations/members.ts";
import { meterOperations } from "#lib/api/operations/meters.ts";
import { mspOperations } from "#lib/api/operations/msps.ts";
import { notificationOperations } from "#lib/api/operations/notifications.ts";
import { passkeyOperations } from "#lib/api/operations/passkeys.ts";
import { proxyOperations } from "#lib/api/operations/proxies.ts";
import { requestLogOperations } from "#lib/api/operations/requests.ts";
import { ruleOperations } from "#lib/api/operations/rules.ts";
import { targetOperations } from "#lib/api/operations/targets.ts";
import { telemetryOperations } from "#lib/api/operations/telemetry.ts";
import { tokenOperations } from "#lib/api/operations/tokens.ts";
import { transformOperations } from "#lib/api/operations/transforms.ts";
import { userOperations } from "#lib/api/operations/users.ts";
import { webhookOperations } from "#lib/api/operations/webhooks.ts";
import type { Operation } from "./operation.ts";

export const OPERATIONS: readonly Operation[] = [
  ...clientOperations,
  ...memberOperations,
  ...inviteOperations,
  ...userOperations,
  ...tokenOperations,
  ...notificationOperations,
  ...credentialOperations,
  ...targetOperations,
  ...proxyOperations,
  ...ruleOperations,
  ...meterOperations,
  ...transformOperations,
  ...proxyPolicyOperations,
  ...limitOverrideOperations,
  ...featureOverrideOperations,
  ...clientBillingOperations,
  ...requestLogOperations,
  ...telemetryOperations,
  ...mspOperations,
  ...mspBillingOperations,
  ...webhookOperations,
  ...docsOperations,
  ...authOperations,
  ...passkeyOperations,
];
