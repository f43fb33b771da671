/**
 * The MSP's team and its invites (spec 2.3a, 3, 4.14): the members with their MSP roles (change,
 * remove), a new invite (the form of POST /api/msps/{mspId}/invites's schema) and the pending
 * invites (change their roles, which extends the expiry by 14 days; cancel). Lists are paged.
 */
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { PAGE_SIZE, Pager } from "../pager";
import { requestSchema, SchemaFields } from "../schema-form";
import { ConfirmDialog, FormError, Status } from "../ui";
import {
  day,
  MSP_ROLE_NAMES,
  MSP_ROLES,
  MSP_ROLES_TEXT,
  type MspRole,
  mspKeys,
  personName,
  topMspRole,
} from "./msp-common";
import { useSchemaForm } from "./msp-form";
import type { MspPageProps } from "./msp-routes";

const INVITE = requestSchema("POST", "/api/msps/{mspId}/invites");
const ROLE_CHOICES = MSP_ROLES.map((role) => ({ value: role, label: MSP_ROLE_NAMES[role] }));

/** The roles to send for a chosen role: each role holds the ones below it, one is enough. */
const rolesFor = (role: MspRole): MspRole[] => [role];

export function MspTeamPage({ mspId, user }: MspPageProps) {
  const me = useQuery({
    queryKey: [...mspKeys.members(mspId), "me", user.userId],
    queryFn: async () =>
      must(
        await api.GET("/api/msps/{mspId}/members/{userId}", {
          params: { path: { mspId, userId: user.userId } },
        }),
      ).members[0],
  });
  const myRole = topMspRole(me.data?.roles ?? []);
  const isAdmin = myRole === "msp_owner" || myRole === "msp_admin";
  const isOwner = myRole === "msp_owner";
  return (
    <>
      <h1>Team</h1>
      <p>{MSP_ROLES_TEXT}</p>
      <Members mspId={mspId} userId={user.userId} canManage={isAdmin} isOwner={isOwner} />
      {isAdmin && <Invites mspId={mspId} isOwner={isOwner} />}
      {me.data && !isAdmin && <p>Only the MSP's admins and owners see and send invites.</p>}
    </>
  );
}

type Member = {
  userId: string;
  roles: MspRole[];
  userEmail: string;
  userFirstName: string;
  userLastName: string;
};

function Members({
  mspId,
  userId,
  canManage,
  isOwner,
}: {
  mspId: string;
  userId: string;
  canManage: boolean;
  isOwner: boolean;
}) {
  const queryClient = useQueryClient();
  const [page, setPage] = useState(1);
  const members = useQuery({
    queryKey: [...mspKeys.members(mspId), page],
    queryFn: async () =>
      must(
        await api.GET("/api/msps/{mspId}/members", {
          params: { path: { mspId }, query: { page, limit: PAGE_SIZE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const [removing, setRemoving] = useState<Member | null>(null);
  const remove = useMutation({
    mutationFn: async (member: Member) =>
      must(
        await api.DELETE("/api/msps/{mspId}/members/{userId}", {
          params: { path: { mspId, userId: member.userId } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: mspKeys.members(mspId) }),
  });
  const list = members.data?.members;
  return (
    <section aria-labelledby="team-members-title">
      <h2 id="team-members-title">Members</h2>
      {members.isPending && <p>Loading…</p>}
      {members.isError && <p role="alert">Error: {errorText(members.error)}</p>}
      {remove.isSuccess && <Status>{personName(remove.variables)} was removed from the MSP.</Status>}
      {list?.length === 0 && (
        <p>
          No members on this page. <a href="#invite-title">Invite someone</a>.
        </p>
      )}
      {list && list.length > 0 && (
        <ul aria-labelledby="team-members-title" className="rows">
          {list.map((member) => (
            <MemberRow
              key={member.userId}
              mspId={mspId}
              member={member}
              self={member.userId === userId}
              canManage={canManage}
              isOwner={isOwner}
              onRemove={() => setRemoving(member)}
              removeError={remove.variables?.userId === member.userId ? remove.error : null}
            />
          ))}
        </ul>
      )}
      <Pager label="members" pagination={members.data?.pagination} onPage={setPage} />
      <ConfirmDialog
        open={removing !== null}
        title={`Remove ${removing ? personName(removing) : "this member"} from the MSP?`}
        confirmLabel="Remove member"
        onCancel={() => setRemoving(null)}
        onConfirm={() => {
          if (removing) remove.mutate(removing);
          setRemoving(null);
        }}
      >
        <p>
          They lose their MSP roles at once, and with them access to every client the MSP manages. Their
          account stays; you can invite them again. The last owner and the last admin cannot be removed.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function MemberRow({
  mspId,
  member,
  self,
  canManage,
  isOwner,
  onRemove,
  removeError,
}: {
  mspId: string;
  member: Member;
  self: boolean;
  canManage: boolean;
  isOwner: boolean;
  onRemove: () => void;
  removeError: unknown;
}) {
  const queryClient = useQueryClient();
  const selectId = useId();
  const held = topMspRole(member.roles);
  const [choice, setChoice] = useState<MspRole>(held);
  useEffect(() => setChoice(held), [held]);
  const change = useMutation({
    mutationFn: async (role: MspRole) =>
      must(
        await api.PUT("/api/msps/{mspId}/members/{userId}", {
          params: { path: { mspId, userId: member.userId } },
          body: { roles: rolesFor(role) },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: mspKeys.members(mspId) }),
  });
  const name = personName(member);
  // Only an owner grants or takes away the owner role.
  const choices = MSP_ROLES.filter((role) => role !== "msp_owner" || isOwner || member.roles.includes(role));
  return (
    <li>
      <p className="row-title">
        {name}
        {self && " (you)"}: {member.roles.map((role) => MSP_ROLE_NAMES[role]).join(", ")}
      </p>
      {canManage && (
        <form
          className="inline-form"
          aria-label={`Role of ${name}`}
          onSubmit={(event) => {
            event.preventDefault();
            change.mutate(choice);
          }}
        >
          <label htmlFor={selectId}>MSP role of {name}</label>
          <select id={selectId} value={choice} onChange={(event) => setChoice(event.target.value as MspRole)}>
            {choices.map((role) => (
              <option key={role} value={role}>
                {MSP_ROLE_NAMES[role]}
              </option>
            ))}
          </select>
          <button type="submit" disabled={change.isPending}>
            Change role
          </button>
          {!self && (
            <button type="button" className="secondary" aria-label={`Remove ${name}`} onClick={onRemove}>
              Remove
            </button>
          )}
        </form>
      )}
      {change.isSuccess && (
        <Status>
          {name} is now {MSP_ROLE_NAMES[change.variables]}.
        </Status>
      )}
      <FormError error={change.error} />
      <FormError error={removeError} />
    </li>
  );
}

type Invite = { inviteId: string; userEmail: string; roles: MspRole[]; inviteExpiry: string };

function Invites({ mspId, isOwner }: { mspId: string; isOwner: boolean }) {
  const queryClient = useQueryClient();
  const [page, setPage] = useState(1);
  const invites = useQuery({
    queryKey: [...mspKeys.invites(mspId), page],
    queryFn: async () =>
      must(
        await api.GET("/api/msps/{mspId}/invites", {
          params: { path: { mspId }, query: { page, limit: PAGE_SIZE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: mspKeys.invites(mspId) });
  const form = useSchemaForm(INVITE, { roles: ["msp_user"] });
  const create = useMutation({
    mutationFn: async (body: { userEmail: string; roles: MspRole[] }) =>
      must(await api.POST("/api/msps/{mspId}/invites", { params: { path: { mspId } }, body })).invites[0],
    onSuccess: () => {
      form.setValue({ roles: ["msp_user"] });
      void refresh();
    },
  });
  const cancel = useMutation({
    mutationFn: async (invite: Invite) =>
      must(
        await api.DELETE("/api/msps/{mspId}/invites/{inviteId}", {
          params: { path: { mspId, inviteId: invite.inviteId } },
        }),
      ),
    onSuccess: refresh,
  });
  const [cancelling, setCancelling] = useState<Invite | null>(null);
  const roleChoices = ROLE_CHOICES.filter((role) => role.value !== "msp_owner" || isOwner);
  const list = invites.data?.invites;
  return (
    <section aria-labelledby="invites-title">
      <h2 id="invites-title">Invites</h2>
      <form
        noValidate
        aria-labelledby="invite-title"
        className="panel"
        onSubmit={(event) => {
          event.preventDefault();
          const body = {
            userEmail: String(form.value.userEmail ?? "").trim(),
            roles: (form.value.roles ?? []) as MspRole[],
          };
          if (form.check(body)) create.mutate(body);
        }}
      >
        <h3 id="invite-title">Invite to the MSP</h3>
        <p className="hint">
          They get an e-mail (and, with an account, a notification) and accept it in the console; the invite
          expires after 7 days. Only an owner invites an owner.
        </p>
        <SchemaFields
          schema={INVITE}
          value={form.value}
          onChange={form.setValue}
          errors={form.all(create.error)}
          labels={{ userEmail: "Email", roles: "MSP roles" }}
          choices={{ roles: ROLE_CHOICES }}
        />
        <FormError error={create.error} fields={["userEmail", "roles"]} />
        {create.isSuccess && create.data && <Status>Invite sent to {create.data.userEmail}.</Status>}
        <button type="submit" disabled={create.isPending}>
          Send invite
        </button>
      </form>
      <h3 id="pending-title">Pending invites</h3>
      {invites.isPending && <p>Loading…</p>}
      {invites.isError && <p role="alert">Error: {errorText(invites.error)}</p>}
      {list?.length === 0 && (
        <p>
          No pending invites. <a href="#invite-title">Invite someone</a> with the form above.
        </p>
      )}
      {cancel.isSuccess && <Status>The invite to {cancel.variables.userEmail} was cancelled.</Status>}
      <FormError error={cancel.error} />
      {list && list.length > 0 && (
        <ul aria-labelledby="pending-title" className="rows">
          {list.map((invite) => (
            <InviteRow
              key={invite.inviteId}
              mspId={mspId}
              invite={invite}
              choices={roleChoices}
              onCancel={() => setCancelling(invite)}
            />
          ))}
        </ul>
      )}
      <Pager label="invites" pagination={invites.data?.pagination} onPage={setPage} />
      <ConfirmDialog
        open={cancelling !== null}
        title={`Cancel the invite to ${cancelling?.userEmail ?? ""}?`}
        confirmLabel="Cancel invite"
        cancelLabel="Keep invite"
        onCancel={() => setCancelling(null)}
        onConfirm={() => {
          if (cancelling) cancel.mutate(cancelling);
          setCancelling(null);
        }}
      >
        <p>The link in the e-mail stops working and the address does not join. You can invite it again.</p>
      </ConfirmDialog>
    </section>
  );
}

function InviteRow({
  mspId,
  invite,
  choices,
  onCancel,
}: {
  mspId: string;
  invite: Invite;
  choices: Array<{ value: MspRole; label: string }>;
  onCancel: () => void;
}) {
  const queryClient = useQueryClient();
  const selectId = useId();
  const held = topMspRole(invite.roles);
  const [choice, setChoice] = useState<MspRole>(held);
  useEffect(() => setChoice(held), [held]);
  const update = useMutation({
    mutationFn: async (role: MspRole) =>
      must(
        await api.PUT("/api/msps/{mspId}/invites/{inviteId}", {
          params: { path: { mspId, inviteId: invite.inviteId } },
          body: { roles: rolesFor(role) },
        }),
      ).invites[0],
    onSuccess: () => queryClient.invalidateQueries({ queryKey: mspKeys.invites(mspId) }),
  });
  return (
    <li>
      <p className="row-title">
        {invite.userEmail}: {invite.roles.map((role) => MSP_ROLE_NAMES[role]).join(", ")}, expires{" "}
        {day(invite.inviteExpiry)}
      </p>
      <form
        className="inline-form"
        aria-label={`Invite to ${invite.userEmail}`}
        onSubmit={(event) => {
          event.preventDefault();
          update.mutate(choice);
        }}
      >
        <label htmlFor={selectId}>MSP role for {invite.userEmail}</label>
        <select id={selectId} value={choice} onChange={(event) => setChoice(event.target.value as MspRole)}>
          {choices.map((role) => (
            <option key={role.value} value={role.value}>
              {role.label}
            </option>
          ))}
        </select>
        <button type="submit" disabled={update.isPending}>
          Change role and extend
        </button>
        <button
          type="button"
          className="secondary"
          aria-label={`Cancel the invite to ${invite.userEmail}`}
          onClick={onCancel}
        >
          Cancel
        </button>
      </form>
      {update.isSuccess && update.data && (
        <Status>
          The invite to {invite.userEmail} is now for {MSP_ROLE_NAMES[topMspRole(update.data.roles)]} and
          expires {day(update.data.inviteExpiry)}.
        </Status>
      )}
      <FormError error={update.error} />
    </li>
  );
}
