/**
 * One organisation (a client, spec 4.1 to 4.3): its members and their roles, its pending invites,
 * rename and delete. What the caller may do follows their own roles; the API decides in the end and
 * its messages appear next to the control that asked.
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { clientKey } from "../org-frame";
import { Link, navigate } from "../router";
import { ConfirmDialog, Field, FormError, fieldError, Status } from "../ui";
import { CLIENTS_KEY } from "./home";

const ROLES = ["owner", "admin", "devops", "user", "reader"] as const;
type Role = (typeof ROLES)[number];

const ROLE_NAMES: Record<Role, string> = {
  owner: "Owner",
  admin: "Admin",
  devops: "DevOps",
  user: "User",
  reader: "Reader",
};

interface Member {
  userId: string;
  roles: Role[];
  userEmail: string;
  userFirstName: string;
  userLastName: string;
}

interface Invite {
  inviteId: string;
  userEmail: string;
  roles: Role[];
  inviteExpiresAt: string;
}

/** The highest of a member's roles (roles are ranked; each holds the ones below). */
const topRole = (roles: readonly Role[]): Role => ROLES.find((role) => roles.includes(role)) ?? "reader";
const hasAny = (roles: readonly Role[], wanted: readonly Role[]) =>
  wanted.some((role) => roles.includes(role));
/** The roles to send for a chosen role: an owner is also an admin, as the creator is. */
const rolesFor = (role: Role): Role[] => (role === "owner" ? ["owner", "admin"] : [role]);

const displayName = (member: { userFirstName: string; userLastName: string; userEmail: string }) => {
  const name = `${member.userFirstName} ${member.userLastName}`.trim();
  return name ? `${name} (${member.userEmail})` : member.userEmail;
};

const membersKey = (clientId: string) => ["members", clientId] as const;
const invitesKey = (clientId: string) => ["invites", clientId] as const;

export function Organisation({ clientId, userId }: { clientId: string; userId: string }) {
  const path = { clientId };
  const client = useQuery({
    queryKey: clientKey(clientId),
    queryFn: async () => must(await api.GET("/api/clients/{clientId}", { params: { path } })).clients[0],
  });
  const members = useQuery({
    queryKey: membersKey(clientId),
    queryFn: async () =>
      must(await api.GET("/api/clients/{clientId}/members", { params: { path, query: { limit: 100 } } }))
        .members,
  });

  if (client.isPending) return <p>Loading…</p>;
  if (client.isError || !client.data)
    return (
      <section aria-labelledby="organisation-title">
        <h1 id="organisation-title">Organisation not found</h1>
        {client.isError && <p role="alert">Error: {errorText(client.error)}</p>}
        <p>
          <Link href="/">Go to your organisations</Link>
        </p>
      </section>
    );

  const me = members.data?.find((member) => member.userId === userId);
  const myRoles: Role[] = me?.roles ?? [];
  const isAdmin = hasAny(myRoles, ["owner", "admin"]);
  const isOwner = myRoles.includes("owner");
  const data = client.data;
  return (
    <>
      <h1 id="organisation-title">{data.clientName}</h1>
      {data.clientStatus === "pendingDeletion" && (
        <p className="notice warning">
          Marked for deletion: its proxies no longer serve, and it is deleted for good
          {data.clientDeletionScheduledAt
            ? ` on ${new Date(data.clientDeletionScheduledAt).toLocaleString()}`
            : " after the grace period"}
          .
        </p>
      )}
      <Members clientId={clientId} userId={userId} members={members} canManage={isAdmin} isOwner={isOwner} />
      {isAdmin && (
        <Invites clientId={clientId} isOwner={isOwner} closed={data.clientStatus === "pendingDeletion"} />
      )}
      <Leave clientId={clientId} userId={userId} clientName={data.clientName} />
      {isAdmin && <Rename clientId={clientId} clientName={data.clientName} />}
      {isOwner && data.clientStatus !== "pendingDeletion" && (
        <Delete clientId={clientId} clientName={data.clientName} />
      )}
    </>
  );
}

function Members({
  clientId,
  userId,
  members,
  canManage,
  isOwner,
}: {
  clientId: string;
  userId: string;
  members: { data?: Member[]; isPending: boolean; isError: boolean; error: unknown };
  canManage: boolean;
  isOwner: boolean;
}) {
  const queryClient = useQueryClient();
  const [removing, setRemoving] = useState<Member | null>(null);
  const remove = useMutation({
    mutationFn: async (member: Member) =>
      must(
        await api.DELETE("/api/clients/{clientId}/members/{userId}", {
          params: { path: { clientId, userId: member.userId } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: membersKey(clientId) }),
  });
  return (
    <section aria-labelledby="members-title">
      <h2 id="members-title">Members</h2>
      <p>
        Roles, highest first: Owner (billing, deleting the organisation), Admin (members and invites), DevOps
        (credentials, targets, proxies), User (uses them), Reader (reads only). Each role holds the ones below
        it.
      </p>
      {members.isPending && <p>Loading…</p>}
      {members.isError && <p role="alert">Error: {errorText(members.error)}</p>}
      {remove.isSuccess && <Status>{displayName(remove.variables)} was removed.</Status>}
      <ul aria-label="Members" className="rows">
        {members.data?.map((member) => (
          <MemberRow
            key={member.userId}
            clientId={clientId}
            member={member}
            self={member.userId === userId}
            canManage={canManage}
            isOwner={isOwner}
            onRemove={() => setRemoving(member)}
            removeError={remove.variables?.userId === member.userId ? remove.error : null}
          />
        ))}
      </ul>
      <ConfirmDialog
        open={removing !== null}
        title={`Remove ${removing ? displayName(removing) : "this member"}?`}
        confirmLabel="Remove member"
        onCancel={() => setRemoving(null)}
        onConfirm={() => {
          if (removing) remove.mutate(removing);
          setRemoving(null);
        }}
      >
        <p>
          They lose their roles in this organisation at once, and with them access to its credentials,
          targets, proxies and logs. Their account and their own API tokens stay; you can invite them again.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function MemberRow({
  clientId,
  member,
  self,
  canManage,
  isOwner,
  onRemove,
  removeError,
}: {
  clientId: string;
  member: Member;
  self: boolean;
  canManage: boolean;
  isOwner: boolean;
  onRemove: () => void;
  removeError: unknown;
}) {
  const queryClient = useQueryClient();
  const selectId = useId();
  // The chosen role; after an answer (or a reload of the list) it shows the role the member holds.
  const held = topRole(member.roles);
  const [choice, setChoice] = useState<Role>(held);
  useEffect(() => setChoice(held), [held]);
  const change = useMutation({
    mutationFn: async (role: Role) =>
      must(
        await api.PUT("/api/clients/{clientId}/members/{userId}", {
          params: { path: { clientId, userId: member.userId } },
          body: { roles: rolesFor(role) },
        }),
      ),
    onSuccess: (data) => {
      setChoice(topRole(data.members[0]?.roles ?? []));
      void queryClient.invalidateQueries({ queryKey: membersKey(clientId) });
      void queryClient.invalidateQueries({ queryKey: CLIENTS_KEY });
    },
  });
  const name = displayName(member);
  // Only an owner grants the owner role; an owner's own row shows it.
  const choices = ROLES.filter((role) => role !== "owner" || isOwner || member.roles.includes("owner"));
  return (
    <li>
      <p className="row-title">
        {name}
        {self && " (you)"}: {member.roles.map((role) => ROLE_NAMES[role]).join(", ")}
      </p>
      {canManage && (
        <form
          className="inline-form"
          aria-label={`Role of ${name}`}
          onSubmit={(event: FormEvent<HTMLFormElement>) => {
            event.preventDefault();
            change.mutate(choice);
          }}
        >
          <label htmlFor={selectId}>Role of {name}</label>
          <select
            id={selectId}
            name="role"
            value={choice}
            onChange={(event) => setChoice(event.target.value as Role)}
          >
            {choices.map((role) => (
              <option key={role} value={role}>
                {ROLE_NAMES[role]}
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
      {/* The API's answer next to the control: a kept role (the last admin, an owner) says why. */}
      {change.isSuccess && (
        <div className={change.data.message === "Member updated" ? undefined : "notice"}>
          <Status>{change.data.message}</Status>
        </div>
      )}
      <FormError error={change.error} />
      <FormError error={removeError} />
    </li>
  );
}

function Leave({ clientId, userId, clientName }: { clientId: string; userId: string; clientName: string }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const leave = useMutation({
    mutationFn: async () =>
      must(
        await api.DELETE("/api/clients/{clientId}/members/{userId}", {
          params: { path: { clientId, userId } },
        }),
      ),
    onSuccess: async () => {
      queryClient.removeQueries({ queryKey: clientKey(clientId) });
      await queryClient.invalidateQueries({ queryKey: CLIENTS_KEY });
      navigate("/");
    },
  });
  return (
    <section aria-labelledby="leave-title">
      <h2 id="leave-title">Leave</h2>
      <p>
        The last remaining admin or owner cannot leave: give someone else the Admin role first, or delete the
        organisation.
      </p>
      <button
        type="button"
        className="secondary"
        onClick={() => setConfirming(true)}
        disabled={leave.isPending}
      >
        Leave organisation
      </button>
      <FormError error={leave.error} />
      <ConfirmDialog
        open={confirming}
        title={`Leave ${clientName}?`}
        confirmLabel="Leave organisation"
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          leave.mutate();
          setConfirming(false);
        }}
      >
        <p>
          You lose your roles here at once, and with them access to its credentials, targets, proxies and
          logs. Only an invite from one of its admins brings you back.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function Invites({ clientId, isOwner, closed }: { clientId: string; isOwner: boolean; closed: boolean }) {
  const queryClient = useQueryClient();
  const path = { clientId };
  const invites = useQuery({
    queryKey: invitesKey(clientId),
    queryFn: async () =>
      must(await api.GET("/api/clients/{clientId}/invites", { params: { path, query: { limit: 100 } } }))
        .invites,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: invitesKey(clientId) });
  const create = useMutation({
    mutationFn: async (body: { email: string; role: Role }) =>
      must(await api.POST("/api/clients/{clientId}/invites", { params: { path }, body })).invites[0],
    onSuccess: refresh,
  });
  const resend = useMutation({
    mutationFn: async (invite: Invite) =>
      must(
        await api.PUT("/api/clients/{clientId}/invites/{inviteId}", {
          params: { path: { clientId, inviteId: invite.inviteId } },
          body: { resend: true },
        }),
      ),
    onSuccess: refresh,
  });
  const cancel = useMutation({
    mutationFn: async (invite: Invite) =>
      must(
        await api.DELETE("/api/clients/{clientId}/invites/{inviteId}", {
          params: { path: { clientId, inviteId: invite.inviteId } },
        }),
      ),
    onSuccess: refresh,
  });
  const [cancelling, setCancelling] = useState<Invite | null>(null);
  const roleId = useId();
  const roleChoices = ROLES.filter((role) => role !== "owner" || isOwner);
  return (
    <section aria-labelledby="invites-title">
      <h2 id="invites-title">Invites</h2>
      {closed && <p>An organisation marked for deletion takes no new members.</p>}
      <form
        hidden={closed}
        noValidate
        aria-labelledby="invite-form-title"
        className="panel"
        onSubmit={(event) => {
          event.preventDefault();
          const element = event.currentTarget;
          const form = new FormData(element);
          create.mutate(
            { email: String(form.get("email") ?? ""), role: String(form.get("role")) as Role },
            { onSuccess: () => element.reset() },
          );
        }}
      >
        <h3 id="invite-form-title">Invite member</h3>
        <p className="hint">
          They get an e-mail with a link to accept; the invite expires after 7 days unless you resend it.
        </p>
        <Field label="Email" name="email" type="email" required error={fieldError(create.error, "email")} />
        <div className="field">
          <label htmlFor={roleId}>Role</label>
          <select id={roleId} name="role" defaultValue="user" aria-describedby={`${roleId}-error`}>
            {roleChoices.map((role) => (
              <option key={role} value={role}>
                {ROLE_NAMES[role]}
              </option>
            ))}
          </select>
          {fieldError(create.error, "role") && (
            <p id={`${roleId}-error`} className="field-error">
              Error: {fieldError(create.error, "role")}
            </p>
          )}
        </div>
        <FormError error={create.error} fields={["email", "role"]} />
        {create.isSuccess && create.data && <Status>Invite sent to {create.data.userEmail}.</Status>}
        <button type="submit" disabled={create.isPending}>
          Send invite
        </button>
      </form>
      <h3 id="pending-title">Pending invites</h3>
      {invites.isPending && <p>Loading…</p>}
      {invites.isError && <p role="alert">Error: {errorText(invites.error)}</p>}
      {invites.data?.length === 0 && <p>No pending invites. Invite someone by e-mail with the form above.</p>}
      {resend.isSuccess && <Status>The invite to {resend.variables.userEmail} was sent again.</Status>}
      {cancel.isSuccess && <Status>The invite to {cancel.variables.userEmail} was cancelled.</Status>}
      <FormError error={resend.error ?? cancel.error} />
      {invites.data && invites.data.length > 0 && (
        <ul aria-labelledby="pending-title" className="rows">
          {invites.data.map((invite) => (
            <li key={invite.inviteId}>
              <p className="row-title">
                {invite.userEmail}: {invite.roles.map((role) => ROLE_NAMES[role]).join(", ")}, expires{" "}
                {new Date(invite.inviteExpiresAt).toLocaleDateString()}
              </p>
              <div className="inline-form">
                <button
                  type="button"
                  aria-label={`Resend the invite to ${invite.userEmail}`}
                  disabled={resend.isPending}
                  onClick={() => resend.mutate(invite)}
                >
                  Resend
                </button>
                <button
                  type="button"
                  className="secondary"
                  aria-label={`Cancel the invite to ${invite.userEmail}`}
                  onClick={() => setCancelling(invite)}
                >
                  Cancel
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
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
        <p>
          The link in the e-mail stops working and the address does not join. You can invite it again later.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function Rename({ clientId, clientName }: { clientId: string; clientName: string }) {
  const queryClient = useQueryClient();
  const rename = useMutation({
    mutationFn: async (name: string) =>
      must(
        await api.PUT("/api/clients/{clientId}", {
          params: { path: { clientId } },
          body: { clientName: name },
        }),
      ).clients[0],
    onSuccess: (client) => {
      if (client) queryClient.setQueryData(clientKey(clientId), client);
      void queryClient.invalidateQueries({ queryKey: CLIENTS_KEY });
    },
  });
  return (
    <section aria-labelledby="rename-title">
      <h2 id="rename-title">Rename</h2>
      <form
        noValidate
        aria-labelledby="rename-title"
        onSubmit={(event) => {
          event.preventDefault();
          rename.mutate(String(new FormData(event.currentTarget).get("clientName") ?? ""));
        }}
      >
        <Field
          label="Organisation name"
          name="clientName"
          required
          defaultValue={clientName}
          error={fieldError(rename.error, "clientName")}
        />
        <FormError error={rename.error} fields={["clientName"]} />
        {rename.isSuccess && <Status>Organisation renamed.</Status>}
        <button type="submit" disabled={rename.isPending}>
          Save
        </button>
      </form>
    </section>
  );
}

function Delete({ clientId, clientName }: { clientId: string; clientName: string }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const [now, setNow] = useState(false);
  const nowId = useId();
  const remove = useMutation({
    mutationFn: async (immediatelyDelete: boolean) =>
      must(
        await api.DELETE("/api/clients/{clientId}", {
          params: { path: { clientId } },
          body: { immediatelyDelete },
        }),
      ),
    onSuccess: async (_, immediatelyDelete) => {
      await queryClient.invalidateQueries({ queryKey: CLIENTS_KEY });
      if (immediatelyDelete) {
        queryClient.removeQueries({ queryKey: clientKey(clientId) });
        navigate("/");
      } else await queryClient.invalidateQueries({ queryKey: clientKey(clientId) });
    },
  });
  return (
    <section aria-labelledby="delete-title">
      <h2 id="delete-title">Delete organisation</h2>
      <p>
        Only the sole remaining administrator may delete an organisation. While other members hold the Admin
        or Owner role, leave it instead.
      </p>
      <button
        type="button"
        className="danger"
        onClick={() => setConfirming(true)}
        disabled={remove.isPending}
      >
        Delete organisation
      </button>
      <FormError error={remove.error} />
      <ConfirmDialog
        open={confirming}
        title={`Delete ${clientName}?`}
        confirmLabel={now ? "Delete now" : "Mark for deletion"}
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          remove.mutate(now);
          setConfirming(false);
        }}
      >
        <p>
          Only the sole remaining administrator (admin or owner) may delete it; while others hold those roles,
          the deletion is refused and you can leave instead.
        </p>
        <p>
          Its credentials, targets, proxies, rules and request history go with it; its members lose access.
          Billing and legal records are kept.
        </p>
        <p>
          By default it is <strong>marked for deletion</strong>: its proxies stop serving now, and it is
          deleted for good after a grace period. Checked below, it is <strong>deleted at once</strong>, in
          every region, and cannot be restored.
        </p>
        <div className="check">
          <input
            id={nowId}
            type="checkbox"
            checked={now}
            onChange={(event) => setNow(event.target.checked)}
          />
          <label htmlFor={nowId}>Delete everything now, without a grace period</label>
        </div>
      </ConfirmDialog>
    </section>
  );
}
