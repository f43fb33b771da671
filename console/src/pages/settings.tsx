/** Settings: profile, passkeys, active sessions, sign-out; and Keys: the user's API tokens. */
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { addPasskey } from "../passkeys";
import { NewPasswordField, usePasswordCheck } from "../password-check";
import { Link, navigate } from "../router";
import { SESSION_KEY } from "../session";
import { ConfirmDialog, Field, FormError, fieldError, Status } from "../ui";
import { revokedSummary } from "./recovery";

interface User {
  userId: string;
  userFirstName: string;
  userLastName: string;
  userPhone: string;
  userBio: string;
  userEmail: string;
}

/** The change-password form has no fields of the person's details: the signed-in user's are `known`. */
const NO_FIELDS: readonly string[] = [];

const values = (event: FormEvent<HTMLFormElement>) => {
  event.preventDefault();
  return Object.fromEntries(new FormData(event.currentTarget)) as Record<string, string>;
};

export function useSignOut() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () => must(await api.POST("/auth/sign-out")),
    onSuccess: () => {
      queryClient.clear();
      queryClient.setQueryData(SESSION_KEY, null);
      navigate("/sign-in");
    },
  });
}

export function Settings({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const profile = useMutation({
    mutationFn: async (body: {
      userFirstName: string;
      userLastName: string;
      userPhone: string;
      userBio: string;
    }) => must(await api.PUT("/api/users/{userId}", { params: { path: { userId: user.userId } }, body })),
    onSuccess: (data) => queryClient.setQueryData(SESSION_KEY, data.users[0] ?? null),
  });
  const signOut = useSignOut();
  const error = profile.error;
  return (
    <>
      <h1>Settings</h1>
      <nav aria-label="Settings">
        <ul className="inline">
          <li>
            <Link href="/settings/keys">Keys</Link>
          </li>
        </ul>
      </nav>
      <section aria-labelledby="profile-title">
        <h2 id="profile-title">Profile</h2>
        <p>Signed in as {user.userEmail}.</p>
        <form
          noValidate
          onSubmit={(event) => {
            const form = values(event);
            profile.mutate({
              userFirstName: form.userFirstName ?? "",
              userLastName: form.userLastName ?? "",
              userPhone: form.userPhone ?? "",
              userBio: form.userBio ?? "",
            });
          }}
        >
          <Field
            label="First name"
            name="userFirstName"
            defaultValue={user.userFirstName}
            error={fieldError(error, "userFirstName")}
          />
          <Field
            label="Last name"
            name="userLastName"
            defaultValue={user.userLastName}
            error={fieldError(error, "userLastName")}
          />
          <Field
            label="Phone"
            name="userPhone"
            type="tel"
            defaultValue={user.userPhone}
            error={fieldError(error, "userPhone")}
          />
          <Field
            label="Bio"
            name="userBio"
            defaultValue={user.userBio}
            error={fieldError(error, "userBio")}
          />
          <FormError error={error} fields={["userFirstName", "userLastName", "userPhone", "userBio"]} />
          {profile.isSuccess && <Status>Profile saved.</Status>}
          <button type="submit" disabled={profile.isPending}>
            Save profile
          </button>
        </form>
      </section>
      <ChangePassword
        userId={user.userId}
        known={[user.userEmail ?? "", user.userFirstName ?? "", user.userLastName ?? ""]}
      />
      <Passkeys />
      <Sessions />
      <section aria-labelledby="sign-out-title">
        <h2 id="sign-out-title">Sign out of this browser</h2>
        <button type="button" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
          Sign out
        </button>
        <FormError error={signOut.error} />
      </section>
      <DeleteAccount userId={user.userId} />
    </>
  );
}

/**
 * The signed-in password change: the current password, the new one, and "Sign out everywhere else"
 * (checked by default: the other sessions, the API tokens and the MCP grants are revoked; this
 * browser stays signed in).
 */
function ChangePassword({ userId, known }: { userId: string; known: readonly string[] }) {
  const queryClient = useQueryClient();
  const checkId = useId();
  const passwordCheck = usePasswordCheck(NO_FIELDS, { known, field: "newPassword" });
  const change = useMutation({
    mutationFn: async (body: {
      currentPassword: string;
      newPassword: string;
      signOutOtherSessions: boolean;
    }) => must(await api.POST("/auth/change-password", { body })),
    onSuccess: () =>
      Promise.all([
        queryClient.invalidateQueries({ queryKey: ["sessions"] }),
        queryClient.invalidateQueries({ queryKey: ["tokens", userId] }),
      ]),
  });
  const error = change.error;
  const revoked = change.data?.revoked;
  return (
    <section aria-labelledby="change-password-title">
      <h2 id="change-password-title">Change password</h2>
      <form
        noValidate
        onSubmit={async (event) => {
          const form = event.currentTarget;
          const { currentPassword = "", newPassword = "", signOutOtherSessions } = values(event);
          if (!(await passwordCheck.beforeSubmit(form))) return;
          change.mutate(
            { currentPassword, newPassword, signOutOtherSessions: signOutOtherSessions === "on" },
            { onSuccess: () => form.reset() },
          );
        }}
      >
        <Field
          label="Current password"
          name="currentPassword"
          type="password"
          autoComplete="current-password"
          required
          error={fieldError(error, "currentPassword")}
        />
        <NewPasswordField
          label="New password"
          name="newPassword"
          check={passwordCheck}
          apiError={fieldError(error, "newPassword")}
        />
        <div className="field checkbox">
          <input
            id={checkId}
            type="checkbox"
            name="signOutOtherSessions"
            defaultChecked
            aria-describedby={`${checkId}-hint`}
          />
          <label htmlFor={checkId}>Sign out everywhere else</label>
          <p id={`${checkId}-hint`} className="hint">
            Ends your other sessions and also revokes your API tokens and MCP grants: programs that use them
            need new ones. This browser stays signed in.
          </p>
        </div>
        <FormError error={error} fields={["currentPassword", "newPassword"]} />
        {revoked && (
          <Status>
            Password changed.{" "}
            {change.variables?.signOutOtherSessions
              ? revokedSummary(revoked, "other ")
              : "Your other sessions, API tokens and MCP grants keep working."}
          </Status>
        )}
        <button type="submit" disabled={change.isPending}>
          Change password
        </button>
      </form>
    </section>
  );
}

/**
 * Deleting the account: scheduled after a grace period. The API signs out every session (this one
 * too) and revokes the tokens and grants at once, so the page goes to Sign-in, which says so.
 */
function DeleteAccount({ userId }: { userId: string }) {
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const deletion = useMutation({
    mutationFn: async () => must(await api.DELETE("/api/users/{userId}", { params: { path: { userId } } })),
    onSuccess: (data) => {
      queryClient.clear();
      queryClient.setQueryData(SESSION_KEY, null);
      const at = data.userDeletionScheduledAt;
      navigate(at ? `/sign-in?deletionScheduledAt=${encodeURIComponent(at)}` : "/sign-in");
    },
  });
  return (
    <section aria-labelledby="delete-account-title">
      <h2 id="delete-account-title">Delete your account</h2>
      <p>
        The account is deleted after a grace period (30 days by default). Until then, signing in with your
        password offers to cancel the deletion.
      </p>
      <button
        type="button"
        className="danger"
        onClick={() => setConfirming(true)}
        disabled={deletion.isPending}
      >
        Delete account
      </button>
      <FormError error={deletion.error} />
      <ConfirmDialog
        open={confirming}
        title="Delete your account?"
        confirmLabel="Schedule the deletion"
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          deletion.mutate();
        }}
      >
        <p>
          You are signed out everywhere at once, this browser too, and your API tokens and MCP grants stop
          working. The account and the organisations of which you are the only member are deleted when the
          grace period ends.
        </p>
        <p>
          If you are the last administrator of an organisation with other members, the deletion is refused:
          make another member an administrator first.
        </p>
      </ConfirmDialog>
    </section>
  );
}

interface Passkey {
  passkeyId: string;
  passkeyName: string;
  passkeyCreated: string;
  passkeyLastUsed: string | null;
}

/** The user's passkeys: add one (the browser's own dialog), list them, remove one after a confirmation. */
function Passkeys() {
  const queryClient = useQueryClient();
  const passkeys = useQuery({
    queryKey: ["passkeys"],
    queryFn: async () => must(await api.GET("/auth/passkeys")).passkeys,
  });
  const add = useMutation({
    mutationFn: (name: string) => addPasskey(name || undefined),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["passkeys"] }),
  });
  const [removing, setRemoving] = useState<Passkey | null>(null);
  const remove = useMutation({
    mutationFn: async (passkeyId: string) =>
      must(await api.DELETE("/auth/passkeys/{passkeyId}", { params: { path: { passkeyId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["passkeys"] }),
  });
  return (
    <section aria-labelledby="passkeys-title">
      <h2 id="passkeys-title">Passkeys</h2>
      <p>A passkey signs you in with this device's screen lock or a security key, without a password.</p>
      <form
        noValidate
        onSubmit={(event) => {
          const { passkeyName = "" } = values(event);
          add.mutate(passkeyName);
        }}
      >
        <Field label="Passkey name (optional)" name="passkeyName" error={fieldError(add.error, "name")} />
        <FormError error={add.error} fields={["name"]} />
        {add.isSuccess && <Status>Passkey added.</Status>}
        <button type="submit" disabled={add.isPending}>
          Add a passkey
        </button>
      </form>
      {passkeys.isError && <p role="alert">Error: {errorText(passkeys.error)}</p>}
      {passkeys.data?.length === 0 && <p>No passkeys yet.</p>}
      <ul aria-label="Your passkeys">
        {passkeys.data?.map((passkey) => (
          <li key={passkey.passkeyId}>
            {passkey.passkeyName}, added {new Date(passkey.passkeyCreated).toLocaleDateString()}
            {passkey.passkeyLastUsed
              ? `, last used ${new Date(passkey.passkeyLastUsed).toLocaleString()}`
              : ", never used"}{" "}
            <button
              type="button"
              aria-label={`Remove ${passkey.passkeyName}`}
              onClick={() => setRemoving(passkey)}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <FormError error={remove.error} />
      <ConfirmDialog
        open={removing !== null}
        title="Remove this passkey?"
        confirmLabel="Remove"
        onCancel={() => setRemoving(null)}
        onConfirm={() => {
          if (removing) remove.mutate(removing.passkeyId);
          setRemoving(null);
        }}
      >
        <p>
          The passkey “{removing?.passkeyName}” no longer signs you in. The authenticator may still list it;
          delete it there too.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function Sessions() {
  const queryClient = useQueryClient();
  const sessions = useQuery({
    queryKey: ["sessions"],
    queryFn: async () => must(await api.GET("/auth/sessions")).sessions,
  });
  const revoke = useMutation({
    mutationFn: async (sessionId: string) =>
      must(await api.DELETE("/auth/sessions/{sessionId}", { params: { path: { sessionId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["sessions"] }),
  });
  return (
    <section aria-labelledby="sessions-title">
      <h2 id="sessions-title">Active sessions</h2>
      {sessions.isError && <p role="alert">Error: {errorText(sessions.error)}</p>}
      <ul>
        {sessions.data?.map((session) => (
          <li key={session.sessionId}>
            {session.userAgent || "Unknown browser"}, signed in{" "}
            {new Date(session.sessionCreated).toLocaleString()}
            {session.current && " (this browser)"}{" "}
            <button
              type="button"
              aria-label={`Sign out of ${session.current ? "this browser" : session.userAgent || "the session"} (${session.sessionId.slice(0, 8)})`}
              onClick={() => revoke.mutate(session.sessionId)}
            >
              Sign out
            </button>
          </li>
        ))}
      </ul>
      <FormError error={revoke.error} />
    </section>
  );
}

interface Token {
  tokenId: string;
  tokenName: string;
  tokenPreview: string;
}

export function Keys({ user }: { user: User }) {
  const queryClient = useQueryClient();
  const path = { userId: user.userId };
  const tokens = useQuery({
    queryKey: ["tokens", user.userId],
    queryFn: async () => must(await api.GET("/api/users/{userId}/tokens", { params: { path } })).tokens,
  });
  const create = useMutation({
    mutationFn: async (tokenName: string) =>
      must(await api.POST("/api/users/{userId}/tokens", { params: { path }, body: { tokenName } })).tokens[0],
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["tokens", user.userId] }),
  });
  const [revoking, setRevoking] = useState<Token | null>(null);
  const revoke = useMutation({
    mutationFn: async (tokenId: string) =>
      must(
        await api.DELETE("/api/users/{userId}/tokens/{tokenId}", { params: { path: { ...path, tokenId } } }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ["tokens", user.userId] }),
  });
  const [copied, setCopied] = useState(false);
  return (
    <>
      <h1>Keys</h1>
      <p>
        <Link href="/settings">Back to settings</Link>
      </p>
      <section aria-labelledby="create-token-title">
        <h2 id="create-token-title">New API token</h2>
        <form
          noValidate
          onSubmit={(event) => {
            const { tokenName = "" } = values(event);
            setCopied(false);
            create.mutate(tokenName);
          }}
        >
          <Field label="Token name" name="tokenName" required error={fieldError(create.error, "tokenName")} />
          <FormError error={create.error} fields={["tokenName"]} />
          <button type="submit" disabled={create.isPending}>
            Create token
          </button>
        </form>
        {create.data && (
          <section className="new-token" aria-label="New token">
            <p>
              <strong>Copy this token now: it is not shown again.</strong>
            </p>
            <p>
              <code data-testid="new-token">{create.data.token}</code>
            </p>
            <button
              type="button"
              onClick={async () => {
                await navigator.clipboard.writeText(create.data?.token ?? "");
                setCopied(true);
              }}
            >
              Copy token
            </button>
            {copied && <Status>Copied.</Status>}
          </section>
        )}
      </section>
      <section aria-labelledby="tokens-title">
        <h2 id="tokens-title">Your tokens</h2>
        {tokens.isError && <p role="alert">Error: {errorText(tokens.error)}</p>}
        {tokens.data?.length === 0 && <p>No tokens yet. Create one above to call the API.</p>}
        <ul>
          {tokens.data?.map((token) => (
            <li key={token.tokenId}>
              {token.tokenName || "Unnamed"} <code>{token.tokenPreview}</code>{" "}
              <button
                type="button"
                aria-label={`Revoke ${token.tokenName || token.tokenPreview}`}
                onClick={() => setRevoking(token)}
              >
                Revoke
              </button>
            </li>
          ))}
        </ul>
        <FormError error={revoke.error} />
      </section>
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke this token?"
        confirmLabel="Revoke"
        onCancel={() => setRevoking(null)}
        onConfirm={() => {
          if (revoking) revoke.mutate(revoking.tokenId);
          setRevoking(null);
        }}
      >
        <p>
          The token “{revoking?.tokenName}” ({revoking?.tokenPreview}) stops working at once: every program
          that uses it gets 401.
        </p>
      </ConfirmDialog>
    </>
  );
}
