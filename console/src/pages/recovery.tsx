/**
 * Recovery that ends every way in (docs/accounts.md#recovery-ends-every-way-in): what a reset or a password change revoked, removing a
 * passkey with the reset's recovery token (on the Reset page and from the e-mail's link,
 * `/remove-passkey`), and an account scheduled for deletion (the sign-in's 409).
 */
import { useMutation } from "@tanstack/react-query";
import { type ReactNode, useId } from "react";
import type { Paths } from "../api/client";
import { api } from "../api/client";
import { ApiError, errorText, must } from "../api/errors";
import { Link, useLocation } from "../router";
import { FormError, Status } from "../ui";

type Revoked =
  Paths["/auth/change-password"]["post"]["responses"][200]["content"]["application/json"]["revoked"];
type ResetAnswer = Paths["/auth/reset-password"]["post"]["responses"][200]["content"]["application/json"];
type RecoveryPasskey = ResetAnswer["passkeys"][number];

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What a reset or a password change revoked, as one sentence. */
export function revokedSummary({ sessions, tokens, grants }: Revoked, other = ""): string {
  return `Signed out of ${count(sessions, `${other}session`)}; revoked ${count(tokens, "API token")} and ${count(grants, "MCP grant")}.`;
}

export const longDate = (iso: string) => new Date(iso).toLocaleDateString(undefined, { dateStyle: "long" });

/** The date of a sign-in refused because the account is scheduled for deletion (its 409), if it was. */
export function scheduledDeletion(error: unknown): string | undefined {
  if (!(error instanceof ApiError) || error.status !== 409) return undefined;
  const body = error.body;
  return typeof body === "object" && body && "userDeletionScheduledAt" in body
    ? String(body.userDeletionScheduledAt)
    : undefined;
}

const removePasskey = async (body: { email: string; passkeyId: string; recoveryToken: string }) =>
  must(await api.POST("/auth/passkeys/remove", { body }));

/** After a reset: the passkeys of the account, each removable in one click with the recovery token. */
export function RecoveryPasskeys({ email, answer }: { email: string; answer: ResetAnswer }) {
  return (
    <section aria-labelledby="recovery-passkeys-title">
      <h2 id="recovery-passkeys-title">Passkeys on this account</h2>
      {answer.passkeys.length === 0 ? (
        <p>No passkeys on this account.</p>
      ) : (
        <>
          <p>
            A passkey signs in without the password. Remove any you do not recognise: someone who got into
            your account may have added it. The e-mail we sent lists them too.
          </p>
          <ul aria-label="Passkeys on this account" className="rows">
            {answer.passkeys.map((passkey) => (
              <RecoveryPasskey
                key={passkey.passkeyId}
                email={email}
                passkey={passkey}
                recoveryToken={answer.recoveryToken}
              />
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function RecoveryPasskey({
  email,
  passkey,
  recoveryToken,
}: {
  email: string;
  passkey: RecoveryPasskey;
  recoveryToken: string;
}) {
  const remove = useMutation({ mutationFn: removePasskey });
  const name = passkey.passkeyName || "Unnamed passkey";
  return (
    <li>
      <span>
        {name}, added {longDate(passkey.passkeyCreated)}
        {passkey.passkeyLastUsed ? `, last used ${new Date(passkey.passkeyLastUsed).toLocaleString()}` : ""}
      </span>{" "}
      {remove.isSuccess ? (
        <Status>Removed: “{name}” no longer signs in.</Status>
      ) : (
        <button
          type="button"
          aria-label={`Remove passkey ${name}`}
          disabled={remove.isPending}
          onClick={() => remove.mutate({ email, passkeyId: passkey.passkeyId, recoveryToken })}
        >
          Remove
        </button>
      )}
      {remove.isError && (
        <p role="alert" className="error">
          Error: {errorText(remove.error)}
        </p>
      )}
    </li>
  );
}

/** `/remove-passkey?email=&passkeyId=&token=`: the reset e-mail's link for one passkey. Nothing happens until the button. */
export function RemovePasskey() {
  const { search } = useLocation();
  const email = search.get("email") ?? "";
  const passkeyId = search.get("passkeyId") ?? "";
  const recoveryToken = search.get("token") ?? "";
  const remove = useMutation({ mutationFn: removePasskey });
  let content: ReactNode;
  if (!email || !passkeyId || !recoveryToken)
    content = (
      <p role="alert">
        This link is incomplete. Open the link of the e-mail again, or{" "}
        <Link href="/forgot-password">reset your password</Link> again to get a new one.
      </p>
    );
  else if (remove.isSuccess)
    content = (
      <>
        <Status>Passkey removed. It no longer signs in to your account.</Status>
        <p>
          <Link href={`/sign-in?email=${encodeURIComponent(email)}`}>Sign in</Link>
        </p>
      </>
    );
  else
    content = (
      <>
        <p>
          This removes the passkey named in your e-mail from the account <strong>{email}</strong>: it will no
          longer sign in. Your password and your other passkeys are not changed.
        </p>
        <dl className="details">
          <dt>Passkey id</dt>
          <dd>
            <code>{passkeyId}</code>
          </dd>
        </dl>
        <FormError error={remove.error} />
        <button
          type="button"
          disabled={remove.isPending}
          onClick={() => remove.mutate({ email, passkeyId, recoveryToken })}
        >
          Remove passkey
        </button>
      </>
    );
  return (
    <section aria-labelledby="remove-passkey-title">
      <h1 id="remove-passkey-title">Remove a passkey</h1>
      {content}
    </section>
  );
}

/**
 * The sign-in's 409 for an account scheduled for deletion (the password was right, no session
 * yet): cancel the deletion and sign in, or leave it scheduled.
 */
export function DeletionOffer({
  at,
  pending,
  onCancelDeletion,
  onKeep,
}: {
  at: string;
  pending: boolean;
  onCancelDeletion: () => void;
  onKeep: () => void;
}) {
  const titleId = useId();
  return (
    <section className="notice warning" aria-labelledby={titleId}>
      <p role="alert" id={titleId}>
        Your account is scheduled for deletion on {longDate(at)}.
      </p>
      <p>
        You are not signed in: asking for the deletion signed you out everywhere and revoked your API tokens
        and MCP grants. Cancel the deletion to keep the account and sign in, or leave it scheduled.
      </p>
      <div className="button-row">
        <button type="button" onClick={onCancelDeletion} disabled={pending}>
          Cancel the deletion and sign in
        </button>
        <button type="button" className="secondary" onClick={onKeep} disabled={pending}>
          Keep it scheduled
        </button>
      </div>
    </section>
  );
}
