/**
 * The invite page `/invites/{inviteId}` (the link of the invite e-mail, which also carries the
 * invited address as `?email=`): a signed-out visitor is offered sign-in or sign-up with that address
 * filled in and comes back here afterwards; a signed-in invitee sees the invite and accepts or
 * declines it (declining is confirmed in a dialog).
 */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "../api/client";
import { ApiError, errorText, must } from "../api/errors";
import { Link, navigate, useLocation } from "../router";
import { ConfirmDialog, FormError } from "../ui";

interface Invitee {
  userId: string;
  userEmail: string;
}

/** `/invites/{inviteId}` -> the invite id, or undefined for another path. */
export const inviteIdOf = (path: string): string | undefined => /^\/invites\/([^/]+)$/.exec(path)?.[1];

/** For a visitor who is not signed in: where to sign in or sign up, coming back here after. */
export function InviteSignedOut({ inviteId }: { inviteId: string }) {
  const { search } = useLocation();
  const email = search.get("email") ?? "";
  const back = `next=${encodeURIComponent(`/invites/${inviteId}`)}`;
  const withEmail = email ? `email=${encodeURIComponent(email)}&` : "";
  return (
    <section aria-labelledby="invite-title">
      <h1 id="invite-title">You are invited</h1>
      <p>
        {email ? `This invitation was sent to ${email}. ` : ""}Sign in with that address to accept or decline
        it, or create an account for it first. You come back to this page afterwards.
      </p>
      <ul className="inline">
        <li>
          <Link href={`/sign-in?${withEmail}${back}`}>Sign in</Link>
        </li>
        <li>
          <Link href={`/sign-up?${withEmail}${back}`}>Sign up</Link>
        </li>
      </ul>
    </section>
  );
}

export function Invite({ inviteId, user }: { inviteId: string; user: Invitee }) {
  const queryClient = useQueryClient();
  const path = { userId: user.userId, inviteId };
  const invite = useQuery({
    queryKey: ["invite", inviteId],
    queryFn: async () =>
      must(await api.GET("/api/users/{userId}/invites/{inviteId}", { params: { path } })).invites[0],
    retry: false,
  });
  const answer = useMutation({
    mutationFn: async (acceptInvite: boolean) =>
      must(
        await api.PUT("/api/users/{userId}/invites/{inviteId}", { params: { path }, body: { acceptInvite } }),
      ),
    onSuccess: (data) => {
      void queryClient.invalidateQueries({ queryKey: ["clients"] });
      navigate("clientId" in data && data.clientId ? `/organisations/${data.clientId}` : "/");
    },
  });
  const [declining, setDeclining] = useState(false);
  const data = invite.data as { clientName?: string; mspName?: string; roles?: string[] } | undefined;
  const name = data?.clientName ?? data?.mspName ?? "an organisation";
  return (
    <section aria-labelledby="invite-title">
      <h1 id="invite-title">Invitation</h1>
      {invite.isPending && <p>Loading…</p>}
      {invite.isError &&
        (invite.error instanceof ApiError && invite.error.status === 404 ? (
          <p role="alert">
            This invitation is not addressed to {user.userEmail}, or it was cancelled, answered or has
            expired. If it was sent to another address, sign out and sign in with that one.
          </p>
        ) : (
          <p role="alert">Error: {errorText(invite.error)}</p>
        ))}
      {data && (
        <>
          <p>
            You are invited to join <strong>{name}</strong> as {data.roles?.join(", ") || "a member"}.
          </p>
          <div className="button-row">
            <button type="button" onClick={() => answer.mutate(true)} disabled={answer.isPending}>
              Accept
            </button>
            <button
              type="button"
              className="secondary"
              onClick={() => setDeclining(true)}
              disabled={answer.isPending}
            >
              Decline
            </button>
          </div>
          <FormError error={answer.error} />
        </>
      )}
      <ConfirmDialog
        open={declining}
        title="Decline this invitation?"
        confirmLabel="Decline"
        onCancel={() => setDeclining(false)}
        onConfirm={() => {
          setDeclining(false);
          answer.mutate(false);
        }}
      >
        <p>
          The invitation to {name} is gone once declined; its sender would have to invite {user.userEmail}{" "}
          again.
        </p>
      </ConfirmDialog>
    </section>
  );
}
