/**
 * One invite lifecycle (spec 2.3, 2.3a, 3, 4.3, 4.14), configured twice: the client invites
 * (lib/domain/invites.ts) and the MSP team invites (lib/domain/msp-team.ts).
 *
 * An invite lives in its parent's partition (the client or the MSP) with a GSI1 entry under the
 * invitee's e-mail; a lock item per (parent, e-mail) makes a second pending invite for the same
 * address a conditional-write failure (409). Invites expire (TTL, Unix seconds); DynamoDB deletes
 * expired items late, so every read filters them out (lib/db/entities/invite.ts).
 *
 * States: pending -> accepted (the invite and its lock go, the member is written, in one
 * transaction with the kind's own join steps) | declined (by the invitee) | cancelled (by the
 * parent's side) | expired (TTL). What differs between the kinds is the configuration: keys,
 * roles, caps, messages, the member item written on accept and the steps that join the parent.
 */
import { randomUUID } from "node:crypto";
import { DeleteCommand } from "#lib/aws/document-client.ts";
import { getConfig } from "#lib/config.ts";
import { type InviteKind, inviteReads } from "#lib/db/entities/invite.ts";
import { findUser, type UserItem } from "#lib/db/entities/user.ts";
import {
  commitSteps,
  homeDb,
  type Item,
  nowIso,
  nowSeconds,
  type TransactionStep,
  tableName,
} from "#lib/db/store.ts";
import { sendEmail, textToHtml } from "#lib/email.ts";
import { describeError, log } from "#lib/log.ts";
import { badRequest, conflict, notFound, upstreamFailed } from "#lib/shared/errors.ts";
import { createNotification } from "./notifications.ts";
import { findUserIdByEmail, requireUser } from "./users.ts";

export const INVITE_NOT_FOUND = "Invite not found";
export const INVITE_EXISTS = "Invite already exists for this email";
export const INVITE_CHANGED = "The invite changed concurrently; retry";

/** What every stored invite has, whatever its kind. */
export interface StoredInvite {
  inviteId: string;
  userEmail: string;
  roles: readonly string[];
  TTL: number;
}

/** The fields a new invite of any kind starts with; the kind adds its entity and parent fields. */
export interface NewInviteFields<R extends string> {
  pKey: string;
  sKey: string;
  gsi1pk: string;
  gsi1sk: string;
  inviteId: string;
  roles: R[];
  userEmail: string;
  invitedBy: string;
  inviteCreated: string;
  inviteUpdated: string;
  TTL: number;
}

/** A step of joining the parent on accept, and the answer when its condition does not hold. */
export interface JoinStep {
  step: TransactionStep;
  refusal: () => Error;
}

export interface InviteConfig<I extends StoredInvite, R extends string> {
  kind: InviteKind<I>;
  /** The parent's id field, named in log lines. */
  parentField: string;
  lifetimeSeconds: number;
  maxPending: number;
  messages: {
    /** 409 when the invitee already belongs to the parent (on create and on accept). */
    alreadyMember: string;
    /** 400 when the parent already has `maxPending` pending invites. */
    tooManyPending: string;
  };
  /** The parent's name for a new invite; throws when there is no such parent or it takes no invites. */
  parentName: (parentId: string) => Promise<string>;
  isMember: (parentId: string, userId: string) => Promise<boolean>;
  /** The stored invite: the common fields with the kind's entity and parent fields. */
  newInvite: (fields: NewInviteFields<R>, parent: { parentId: string; parentName: string }) => I;
  /** The parent's name on a stored invite. */
  parentNameOf: (invite: I) => string;
  /** Fields that follow the expiry (set with TTL on create and on renew). */
  expiryFields: (ttl: number) => Record<string, unknown>;
  /** How the e-mail and the inbox notification name what the invitee joins. */
  describe: { email: (parentName: string) => string; notification: (parentName: string) => string };
  /** The member item written on accept. */
  memberItem: (invite: I, userId: string, now: string) => Item;
  /** The kind's further steps of joining (counting the member, listing the parent on the user). */
  joinSteps: (invite: I, userId: string, now: string) => JoinStep[];
}

// Step names of the invite transactions, read back on cancellation.
const WRITE_INVITE = "write invite";
const CLAIM_EMAIL_LOCK = "claim e-mail lock";
const REMOVE_INVITE = "remove invite";
const RELEASE_EMAIL_LOCK = "release e-mail lock";
const UPDATE_INVITE = "update invite";
const RENEW_EMAIL_LOCK = "renew e-mail lock";
const ADD_MEMBER = "add member";

/** A new invite and the claim of its e-mail lock (free, or held by an expired invite). */
const newInviteSteps = (invite: StoredInvite, lock: Record<string, unknown>): TransactionStep[] => [
  {
    name: WRITE_INVITE,
    action: {
      Put: { TableName: tableName(), Item: invite, ConditionExpression: "attribute_not_exists(pKey)" },
    },
  },
  {
    name: CLAIM_EMAIL_LOCK,
    action: {
      Put: {
        TableName: tableName(),
        Item: lock,
        ConditionExpression: "attribute_not_exists(pKey) OR #ttl <= :now",
        ExpressionAttributeNames: { "#ttl": "TTL" },
        ExpressionAttributeValues: { ":now": nowSeconds() },
      },
    },
  },
];

/** The lifecycle of one kind of invite (client or MSP), as its configuration says. */
export class InviteLifecycle<I extends StoredInvite, R extends string> {
  private readonly kind: InviteConfig<I, R>["kind"];
  private readonly messages: InviteConfig<I, R>["messages"];
  private readonly reads: ReturnType<typeof inviteReads<I>>;

  constructor(private readonly config: InviteConfig<I, R>) {
    this.kind = config.kind;
    this.messages = config.messages;
    this.reads = inviteReads(config.kind);
  }

  /** The parent's pending invites. */
  listPendingOf(parentId: string): Promise<I[]> {
    return this.reads.listPendingOf(parentId);
  }

  /** Delete the e-mail lock only while it still belongs to this invite (a newer invite may hold it). */
  private releaseEmailLock(invite: I): TransactionStep {
    return {
      name: RELEASE_EMAIL_LOCK,
      action: {
        Delete: {
          TableName: tableName(),
          Key: this.kind.keys.emailLock(this.kind.parentIdOf(invite), invite.userEmail),
          ConditionExpression: "inviteId = :id",
          ExpressionAttributeValues: { ":id": invite.inviteId },
        },
      },
    };
  }

  private inviteKey(invite: I) {
    return this.kind.keys.item(this.kind.parentIdOf(invite), invite.inviteId);
  }

  /** Delete the invite while it exists (`live`: and has not expired; `addressedTo`: and is addressed to that e-mail). */
  private removeInvite(invite: I, only: { addressedTo?: string; live?: boolean }): TransactionStep {
    const values = {
      ...(only.live ? { ":nowSec": nowSeconds() } : {}),
      ...(only.addressedTo ? { ":email": only.addressedTo } : {}),
    };
    return {
      name: REMOVE_INVITE,
      action: {
        Delete: {
          TableName: tableName(),
          Key: this.inviteKey(invite),
          ConditionExpression: [
            "attribute_exists(pKey)",
            ...(only.live ? ["#ttl > :nowSec"] : []),
            ...(only.addressedTo ? ["userEmail = :email"] : []),
          ].join(" AND "),
          ...(only.live ? { ExpressionAttributeNames: { "#ttl": "TTL" } } : {}),
          ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
        },
      },
    };
  }

  async sendInviteEmail(invite: I, inviter: UserItem | undefined) {
    const who = inviter
      ? `${inviter.userFirstName} ${inviter.userLastName}`.trim() || inviter.userEmail
      : "A member";
    const name = this.config.parentNameOf(invite);
    const { appUrl } = getConfig();
    const text = [
      `${who} invited you to join ${this.config.describe.email(name)} as ${invite.roles.join(", ")}.`,
      "",
      `Accept the invitation: ${appUrl}/invites/${invite.inviteId}?email=${encodeURIComponent(invite.userEmail)}`,
      "",
      `The invitation expires on ${new Date(invite.TTL * 1000).toUTCString()}.`,
      "",
      "--",
      `Sent by the API gateway at ${appUrl} because ${who} invited this address. If you do not expect it, ignore this message.`,
    ].join("\n");
    await sendEmail({
      to: invite.userEmail,
      subject: `You are invited to join ${name}`,
      text,
      html: textToHtml(text),
    });
  }

  /**
   * Delete an invite and, when it still points at this invite, its e-mail lock. With
   * `onlyForEmail` (the invitee's side) the invite must still be addressed to that e-mail.
   */
  async remove(invite: I, onlyForEmail?: string): Promise<void> {
    const steps: TransactionStep[] = [
      this.removeInvite(invite, { addressedTo: onlyForEmail }),
      this.releaseEmailLock(invite),
    ];
    const lockMoved = await commitSteps(steps, {
      cancelled: ({ failed }) => {
        if (failed.includes(REMOVE_INVITE)) return notFound(INVITE_NOT_FOUND);
        return failed.includes(RELEASE_EMAIL_LOCK) ? ("lock moved" as const) : undefined;
      },
    });
    // The lock belongs to a newer invite: remove only this one.
    if (lockMoved)
      await homeDb().send(new DeleteCommand({ TableName: tableName(), Key: this.inviteKey(invite) }));
  }

  /** The parent's pending invite, or 404. */
  async get(parentId: string, inviteId: string): Promise<I> {
    const invite = await this.reads.findPending(parentId, inviteId);
    if (!invite) throw notFound(INVITE_NOT_FOUND);
    return invite;
  }

  private async inviteeEmail(userId: string) {
    return (await requireUser(userId)).userEmail.toLowerCase();
  }

  /**
   * Issue a new invite: checked (parent, membership, the cap), written with its e-mail lock (409
   * `Invite already exists for this email` while another live invite holds the lock), then
   * e-mailed. Nothing is half-done: an invite whose e-mail failed is withdrawn and the caller
   * gets 502. An invitee who already has an account also gets an inbox notification (best effort).
   */
  async create(parentId: string, callerId: string, email: string, roles: R[]): Promise<I> {
    const [parentName, existingUserId, pending, inviter] = await Promise.all([
      this.config.parentName(parentId),
      findUserIdByEmail(email),
      this.reads.listPendingOf(parentId),
      findUser(callerId),
    ]);
    if (existingUserId && (await this.config.isMember(parentId, existingUserId)))
      throw conflict(this.messages.alreadyMember);
    if (pending.length >= this.config.maxPending) throw badRequest(this.messages.tooManyPending);
    const inviteId = randomUUID();
    const now = nowIso();
    const ttl = nowSeconds() + this.config.lifetimeSeconds;
    const invite = this.config.newInvite(
      {
        ...this.kind.keys.item(parentId, inviteId),
        ...this.kind.keys.byEmail(email, inviteId),
        inviteId,
        roles,
        userEmail: email,
        invitedBy: callerId,
        inviteCreated: now,
        inviteUpdated: now,
        TTL: ttl,
      },
      { parentId, parentName },
    );
    const lock = {
      ...this.kind.keys.emailLock(parentId, email),
      entity: this.kind.lockEntity,
      inviteId,
      TTL: ttl,
    };
    await commitSteps(newInviteSteps(invite, lock), {
      cancelled: ({ failed }) => (failed.includes(CLAIM_EMAIL_LOCK) ? conflict(INVITE_EXISTS) : undefined),
    });
    try {
      await this.sendInviteEmail(invite, inviter);
    } catch (error) {
      log.error("Invite e-mail failed; withdrawing the invite", {
        [this.config.parentField]: parentId,
        inviteId,
        ...describeError(error),
      });
      await this.remove(invite);
      throw upstreamFailed("Could not send the invite email; the invite was not created");
    }
    if (existingUserId) {
      await createNotification(
        { kind: "user", userId: existingUserId },
        {
          type: "invitation",
          title: `Invitation to ${parentName}`,
          message: `You are invited to join ${this.config.describe.notification(parentName)} as ${roles.join(", ")}.`,
        },
      ).catch((error: unknown) => log.warn("Invite notification failed", describeError(error)));
    }
    return invite;
  }

  /**
   * New roles and expiry for a pending invite, its lock renewed with it: 404 when it is gone,
   * its lock no longer points at it, or `guard` no longer holds (`unexpired`: still live;
   * `unchanged`: its expiry is still the one read).
   */
  async renew(invite: I, roles: R[], ttl: number, guard: "unexpired" | "unchanged"): Promise<I> {
    const now = nowIso();
    const fields = { roles, TTL: ttl, inviteUpdated: now, ...this.config.expiryFields(ttl) };
    const names = Object.keys(fields);
    await commitSteps(
      [
        {
          name: UPDATE_INVITE,
          action: {
            Update: {
              TableName: tableName(),
              Key: this.inviteKey(invite),
              UpdateExpression: `SET ${names.map((_, index) => `#f${index} = :f${index}`).join(", ")}`,
              ConditionExpression:
                guard === "unexpired"
                  ? "attribute_exists(pKey) AND #ttl > :nowSec"
                  : "attribute_exists(pKey) AND #ttl = :read",
              ExpressionAttributeNames: {
                "#ttl": "TTL",
                ...Object.fromEntries(names.map((name, index) => [`#f${index}`, name])),
              },
              ExpressionAttributeValues: {
                ...Object.fromEntries(Object.values(fields).map((value, index) => [`:f${index}`, value])),
                ...(guard === "unexpired" ? { ":nowSec": nowSeconds() } : { ":read": invite.TTL }),
              },
            },
          },
        },
        {
          name: RENEW_EMAIL_LOCK,
          action: {
            Update: {
              TableName: tableName(),
              Key: this.kind.keys.emailLock(this.kind.parentIdOf(invite), invite.userEmail),
              UpdateExpression: "SET #ttl = :ttl",
              ConditionExpression: "inviteId = :id",
              ExpressionAttributeNames: { "#ttl": "TTL" },
              ExpressionAttributeValues: { ":ttl": ttl, ":id": invite.inviteId },
            },
          },
        },
      ],
      // gone, expired, or its lock no longer points at it
      { cancelled: ({ failed }) => (failed.length > 0 ? notFound(INVITE_NOT_FOUND) : undefined) },
    );
    return { ...invite, ...fields };
  }

  /** The parent's side cancels a pending invite (404 when there is none). */
  async cancel(parentId: string, inviteId: string): Promise<void> {
    await this.remove(await this.get(parentId, inviteId));
  }

  // ---- the invitee's side, by the e-mail address of the caller's account ----

  async listAddressedTo(userId: string): Promise<I[]> {
    return this.reads.listPendingAddressedTo(await this.inviteeEmail(userId));
  }

  /** An invite addressed to this user, or undefined (someone else's is not theirs to see). */
  async findAddressedTo(userId: string, inviteId: string): Promise<I | undefined> {
    return this.reads.findPendingAddressedTo(await this.inviteeEmail(userId), inviteId);
  }

  /**
   * Accept, in one transaction: the invite (still live and addressed to this e-mail) and its
   * lock go, the member is written, and the kind's join steps run. 404 when the invite is gone,
   * 409 when the user is a member already, the join step's own answer when it refuses.
   */
  async accept(userId: string, invite: I): Promise<void> {
    const now = nowIso();
    const join = this.config.joinSteps(invite, userId, now);
    const steps: TransactionStep[] = [
      this.removeInvite(invite, { addressedTo: invite.userEmail, live: true }),
      this.releaseEmailLock(invite),
      {
        name: ADD_MEMBER,
        action: {
          Put: {
            TableName: tableName(),
            Item: this.config.memberItem(invite, userId, now),
            ConditionExpression: "attribute_not_exists(pKey)",
          },
        },
      },
      ...join.map((joining) => joining.step),
    ];
    await commitSteps(steps, {
      cancelled: ({ failed, conflict: concurrent }) => {
        if (failed.includes(REMOVE_INVITE) || failed.includes(RELEASE_EMAIL_LOCK))
          return notFound(INVITE_NOT_FOUND);
        if (failed.includes(ADD_MEMBER)) return conflict(this.messages.alreadyMember);
        const refused = join.find((joining) => failed.includes(joining.step.name));
        if (refused) return refused.refusal();
        return concurrent ? conflict(INVITE_CHANGED) : undefined;
      },
    });
  }

  /** The invitee declines: the invite (still addressed to them) and its lock go. */
  async decline(invite: I): Promise<void> {
    await this.remove(invite, invite.userEmail);
  }
}

export const inviteLifecycle = <I extends StoredInvite, R extends string>(config: InviteConfig<I, R>) =>
  new InviteLifecycle(config);
