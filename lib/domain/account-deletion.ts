/**
 * Deleting clients and users.
 *
 * Client: DELETE with immediatelyDelete true purges now; false (the default) marks the client
 * `pendingDeletion` and queues it (GSI2 DELETION#CLIENT, ordered by due time); the hourly
 * account-purge function purges it when the grace period (CLIENT_DELETION_GRACE_DAYS, default 30)
 * ends. Until then the client stays readable by its members and shows clientStatus and
 * clientDeletionScheduledAt; an immediate DELETE during the grace period purges at once.
 *
 * A purge cannot be one transaction (a client may own thousands of items in several regions), so
 * it is ordered and idempotent instead: regional data first (proxy-owned partitions before the
 * client's partition, which lists the proxies), then home notifications and memberships, a
 * tombstone (billing and legal records are kept), and the client item itself last. If it stops
 * half-way, running it again finishes the job; the client item is still there to say so.
 */

import { UpdateCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { syncClientRuntime } from "#lib/db/entities/client-runtime.ts";
import { listDueDeletions, queueForDeletion } from "#lib/db/entities/deletion-queue.ts";
import type { MemberItem } from "#lib/db/entities/member.ts";
import type { UserItem } from "#lib/db/entities/user.ts";
import {
  clientOwnedRegionalPartitions,
  keys,
  meterOwnedRegionalPartitions,
  proxyOwnedRegionalPartitions,
  REGIONAL_SK,
} from "#lib/db/keys.ts";
import {
  batchDelete,
  commitSteps,
  deletePartition,
  homeDb,
  isConditionalCheckFailure,
  keyOf,
  nowIso,
  queryPartition,
  tableName,
} from "#lib/db/store.ts";
import { describeError, log } from "#lib/log.ts";
import { conflict, notFound } from "#lib/shared/errors.ts";
import type { ClientAccess } from "./access.ts";
import { CLIENT_NOT_FOUND, getMemberItem, loadClient, memberRef } from "./clients.ts";
import { checkClientDeletion } from "./member-rules.ts";
import { membershipRemovalSteps } from "./members.ts";
import { revokeEveryWayIn } from "./revocation.ts";
import { requireUser, userClientIds } from "./users.ts";

const DAY_MS = 86_400_000;

/** Delete (or schedule the deletion of) the organisation the access was granted on. */
export async function deleteClient(access: ClientAccess, immediately: boolean) {
  const { clientId, userId: callerId } = access;
  const entry = await loadClient(clientId);
  if (!entry) throw notFound(CLIENT_NOT_FOUND);
  // Only the sole remaining administrator may delete it (spec 4.1).
  checkClientDeletion({ callerUserId: callerId, members: entry.members });
  if (immediately) {
    await purgeClient(clientId, { deletedBy: callerId });
    return { message: "Client deleted", clientDeletionScheduledAt: null };
  }
  const due = new Date(Date.now() + getConfig().clientDeletionGraceDays * DAY_MS).toISOString();
  await queueDeletion("CLIENT", keys.client(clientId), due, callerId);
  // The organisation's proxies stop serving traffic from the next request on (docs/accounts-api.md).
  await syncClientRuntime(clientId, { clientStatus: "pendingDeletion" });
  return {
    message: `Client marked for deletion; it will be deleted on ${due}`,
    clientDeletionScheduledAt: due,
  };
}

async function queueDeletion(
  kind: "CLIENT" | "USER",
  key: { pKey: string; sKey: string },
  due: string,
  by: string,
) {
  if (!(await queueForDeletion(kind, key, due, by)))
    throw notFound(kind === "CLIENT" ? CLIENT_NOT_FOUND : "User not found");
}

/** Delete a region's data of a client: proxy- and meter-owned partitions, then the client's own. */
async function purgeClientRegion(clientId: string, region: string): Promise<number> {
  const partition = keys.clientPartition(clientId);
  let deleted = 0;
  for (const [prefix, owned] of [
    [REGIONAL_SK.proxyPrefix, proxyOwnedRegionalPartitions],
    [
      REGIONAL_SK.meterPrefix,
      // `<proxyId>#<meterId>`; the proxy's meter count (`<proxyId>##COUNT`) owns nothing.
      (sKeyTail: string) => {
        const meterId = sKeyTail.split("#")[1];
        return meterId ? meterOwnedRegionalPartitions(meterId) : [];
      },
    ],
  ] as const) {
    const items = await queryPartition(partition, { region, sKeyPrefix: prefix, max: 100_000 });
    for (const item of items) {
      const id = keyOf(item).sKey.slice(prefix.length);
      for (const pKey of owned(id)) deleted += await deletePartition(pKey, { region });
    }
  }
  for (const pKey of clientOwnedRegionalPartitions(clientId))
    deleted += await deletePartition(pKey, { region });
  deleted += await deletePartition(partition, { region });
  return deleted;
}

export async function purgeClient(clientId: string, context: { deletedBy: string }): Promise<void> {
  const config = getConfig();
  const entry = await loadClient(clientId);
  if (!entry) return; // already purged (the tombstone records it)
  // Traffic stops first (the version moves with the status), then the partitions go in batches.
  await syncClientRuntime(clientId, { clientStatus: "pendingDeletion" });
  for (const region of config.regions) {
    const count = await purgeClientRegion(clientId, region);
    if (count > 0) log.info("Purged regional client data", { clientId, region, items: count });
  }
  await deletePartition(keys.clientNotificationPartition(clientId));
  for (const member of entry.members) {
    await homeDb()
      .send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.user(member.userId),
          UpdateExpression: "DELETE userClients :client",
          ConditionExpression: "attribute_exists(pKey)",
          ExpressionAttributeValues: { ":client": new Set([clientId]) },
        }),
      )
      .catch((error: unknown) => {
        if (!isConditionalCheckFailure(error)) throw error;
      });
  }
  const configItem = (await queryPartition(keys.clientPartition(clientId), { sKeyPrefix: "CONFIG" }))[0];
  await homeDb().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.deletedClient(clientId),
      UpdateExpression:
        "SET entity = :entity, clientId = :id, clientName = :name, clientCreated = :created, deletedAt = if_not_exists(deletedAt, :now), deletedBy = :by, paymentProvider = :provider, paymentCustomerId = :customer",
      ExpressionAttributeValues: {
        ":entity": "deletedClient",
        ":id": clientId,
        ":name": entry.client.clientName,
        ":created": entry.client.clientCreated,
        ":now": nowIso(),
        ":by": context.deletedBy,
        ":provider": configItem?.paymentProvider ?? null,
        ":customer": configItem?.paymentCustomerId ?? null,
      },
    }),
  );
  // Everything in the client partition except the client item, then the client item.
  const homeItems = await queryPartition(keys.clientPartition(clientId), { max: 100_000 });
  await batchDelete(homeItems.filter((i) => i.sKey !== keys.client(clientId).sKey).map(keyOf));
  await batchDelete([keys.client(clientId)]);
  log.info("Client purged", { clientId, deletedBy: context.deletedBy });
}

interface UserDeletionPlan {
  purge: string[];
  leave: {
    clientId: string;
    member: MemberItem;
    counts: { adminCount: number; ownerCount: number };
    plan: { adminDelta: number; ownerDelta: number };
  }[];
}

/** Decide, for every client of the user, what deleting the user does; refuse when it would orphan one. */
async function planUserDeletion(user: UserItem): Promise<UserDeletionPlan> {
  const userId = user.userId;
  const plan: UserDeletionPlan = { purge: [], leave: [] };
  for (const clientId of userClientIds(user)) {
    const entry = await loadClient(clientId);
    const memberItem = await getMemberItem(clientId, userId);
    if (!entry || !memberItem) continue;
    const roles = memberRef(memberItem).roles;
    if (entry.members.length === 1) {
      plan.purge.push(clientId);
      continue;
    }
    const counts = { adminCount: entry.client.adminCount, ownerCount: entry.client.ownerCount };
    if (
      (roles.includes("admin") && counts.adminCount <= 1) ||
      (roles.includes("owner") && counts.ownerCount <= 1)
    ) {
      throw conflict(
        `Cannot delete user, last remaining admin of client ${clientId}; give another member the admin role or delete the client first`,
      );
    }
    plan.leave.push({
      clientId,
      member: memberItem,
      counts,
      plan: { adminDelta: roles.includes("admin") ? -1 : 0, ownerDelta: roles.includes("owner") ? -1 : 0 },
    });
  }
  return plan;
}

export async function deleteUserAccount(userId: string, immediately: boolean) {
  const user = await requireUser(userId);
  const plan = await planUserDeletion(user);
  if (!immediately) {
    const due = new Date(Date.now() + getConfig().clientDeletionGraceDays * DAY_MS).toISOString();
    await queueDeletion("USER", keys.user(userId), due, userId);
    // Signed out everywhere at once (docs/accounts.md#recovery-ends-every-way-in): the grace period keeps the data, not the access.
    // Signing in with the password during it offers to cancel (lib/domain/accounts.ts signIn).
    await revokeEveryWayIn(userId);
    return {
      message: `User marked for deletion; the account will be deleted on ${due}`,
      userDeletionScheduledAt: due,
    };
  }
  await executeUserDeletion(user, plan);
  return { message: "User deleted", userDeletionScheduledAt: null };
}

async function executeUserDeletion(user: UserItem, plan: UserDeletionPlan): Promise<void> {
  const userId = user.userId;
  for (const leave of plan.leave) {
    await commitSteps(membershipRemovalSteps(leave.clientId, userId, leave.member, leave.counts, leave.plan));
  }
  for (const clientId of plan.purge) await purgeClient(clientId, { deletedBy: userId });
  await batchDelete(Object.values(user.tokens).map((token) => keys.userToken(token.hash)));
  await deletePartition(keys.userNotificationPartition(userId));
  await deletePartition(keys.systemNotificationReceipt(userId, "").pKey);
  await batchDelete([keys.userEmail(user.userEmail), keys.user(userId)]);
  // What else the user's partition holds: the sign-in account, pending codes, sessions (docs/accounts.md).
  await deletePartition(keys.user(userId).pKey);
  log.info("User deleted", { userId });
}

/** The scheduled job: purge every client and user whose grace period has ended. */
export async function purgeDueAccounts(
  now = new Date(),
): Promise<{ clients: number; users: number; failed: number }> {
  const result = { clients: 0, users: 0, failed: 0 };
  for (const kind of ["CLIENT", "USER"] as const) {
    const { due, unreadable } = await listDueDeletions(kind, now);
    for (const entry of unreadable) {
      // A broken item stays queued (and counted as failed) until someone repairs it.
      result.failed++;
      log.error("Scheduled account purge failed", { kind, pKey: entry.key.pKey, error: entry.problem });
    }
    for (const entry of due) {
      try {
        if (entry.entity === "client") {
          await purgeClient(entry.clientId, { deletedBy: entry.deletionRequestedBy ?? "schedule" });
          result.clients++;
        } else {
          const user = await requireUser(entry.userId);
          await executeUserDeletion(user, await planUserDeletion(user));
          result.users++;
        }
      } catch (error) {
        // One failure must not stop the others; it stays queued and is retried next run.
        result.failed++;
        log.error("Scheduled account purge failed", { kind, pKey: entry.pKey, ...describeError(error) });
      }
    }
  }
  return result;
}
