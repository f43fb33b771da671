/**
 * The invitee's side of every invite (spec 3, 4.3, 4.14): /api/users/{userId}/invites lists,
 * shows, accepts and rejects the client invites (lib/domain/invites.ts) and the MSP invites
 * (lib/domain/msp-team.ts) addressed to the caller's e-mail address, alike.
 */
import { type PageRequest, paginate } from "#lib/db/pagination.ts";
import { describeError, log } from "#lib/log.ts";
import {
  acceptInvite,
  getInviteeInvite,
  listPendingClientInvitesOfInvitee,
  rejectInvite,
  toApiInvite,
} from "./invites.ts";
import {
  acceptMspInvite,
  findMspInviteForInvitee,
  listMspInvitesAddressedTo,
  rejectMspInvite,
  toApiInviteeMspInvite,
} from "./msp-team.ts";
import { createNotification } from "./notifications.ts";

export async function listAllInviteeInvites(userId: string, page: PageRequest) {
  const [clientInvites, mspInvites] = await Promise.all([
    listPendingClientInvitesOfInvitee(userId),
    listMspInvitesAddressedTo(userId),
  ]);
  const all = [...clientInvites.map(toApiInvite), ...mspInvites.map(toApiInviteeMspInvite)];
  const { items, pagination } = paginate(all, page);
  return { invites: items, pagination };
}

export async function getAnyInviteeInvite(userId: string, inviteId: string) {
  const msp = await findMspInviteForInvitee(userId, inviteId);
  if (msp) return toApiInviteeMspInvite(msp);
  return getInviteeInvite(userId, inviteId);
}

/** Accept a client invite (joins the client) or an MSP invite (joins the MSP, userMsps updated). */
export async function acceptAnyInvite(userId: string, inviteId: string) {
  const msp = await findMspInviteForInvitee(userId, inviteId);
  if (!msp) return { kind: "client" as const, ...(await acceptInvite(userId, inviteId)) };
  const joined = await acceptMspInvite(userId, msp);
  await createNotification(
    { kind: "user", userId },
    {
      type: "invitation",
      title: `Joined ${msp.mspName}`,
      message: `You joined the MSP ${msp.mspName} as ${joined.roles.join(", ")}.`,
    },
  ).catch((error: unknown) => log.warn("MSP join notification failed", describeError(error)));
  return { kind: "msp" as const, ...joined };
}

export async function rejectAnyInvite(userId: string, inviteId: string): Promise<void> {
  const msp = await findMspInviteForInvitee(userId, inviteId);
  if (msp) return rejectMspInvite(msp);
  return rejectInvite(userId, inviteId);
}
