/** Sign-up, e-mail verification, sign-in, forgotten and reset passwords (public pages). */
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useRef, useState } from "react";
import { api } from "../api/client";
import { errorText, must } from "../api/errors";
import { signInWithPasskey } from "../passkeys";
import { NewPasswordField, usePasswordCheck } from "../password-check";
import { Link, navigate, useLocation } from "../router";
import { SESSION_KEY } from "../session";
import { Field, FormError, fieldError, Status } from "../ui";
import { DeletionOffer, longDate, RecoveryPasskeys, revokedSummary, scheduledDeletion } from "./recovery";

const values = (event: FormEvent<HTMLFormElement>) => {
  event.preventDefault();
  return Object.fromEntries(new FormData(event.currentTarget)) as Record<string, string>;
};

/** `&next=<path>` to carry on through sign-up, verification and sign-in (an invite's page), or "". */
const nextParam = (search: URLSearchParams) => {
  const next = search.get("next");
  return next?.startsWith("/") && !next.startsWith("//") ? `&next=${encodeURIComponent(next)}` : "";
};

/** The sign-up form's fields that hold the person's own details (a password built from them is refused). */
const SIGN_UP_INPUTS = ["email", "firstName", "lastName"] as const;
const RESET_INPUTS = ["email"] as const;

export function SignUp() {
  const { search } = useLocation();
  const passwordCheck = usePasswordCheck(SIGN_UP_INPUTS);
  const signUp = useMutation({
    mutationFn: async (body: { email: string; password: string; firstName: string; lastName: string }) =>
      must(await api.POST("/auth/sign-up", { body })),
    onSuccess: (_data, body) =>
      navigate(`/verify-email?email=${encodeURIComponent(body.email)}${nextParam(search)}`),
  });
  const error = signUp.error;
  return (
    <section aria-labelledby="sign-up-title">
      <h1 id="sign-up-title">Sign up</h1>
      <form
        noValidate
        onSubmit={async (event) => {
          const form = event.currentTarget;
          const { email = "", password = "", firstName = "", lastName = "" } = values(event);
          if (await passwordCheck.beforeSubmit(form)) signUp.mutate({ email, password, firstName, lastName });
        }}
      >
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="email"
          defaultValue={search.get("email") ?? ""}
          required
          error={fieldError(error, "email")}
        />
        <NewPasswordField
          label="Password"
          name="password"
          check={passwordCheck}
          apiError={fieldError(error, "password")}
        />
        <Field
          label="First name"
          name="firstName"
          autoComplete="given-name"
          required
          error={fieldError(error, "firstName")}
        />
        <Field
          label="Last name"
          name="lastName"
          autoComplete="family-name"
          required
          error={fieldError(error, "lastName")}
        />
        <FormError error={error} fields={["email", "password", "firstName", "lastName"]} />
        <button type="submit" disabled={signUp.isPending}>
          Create account
        </button>
      </form>
      <p>
        Already have an account? <Link href="/sign-in">Sign in</Link>
      </p>
    </section>
  );
}

export function Verify() {
  const { search } = useLocation();
  const email = search.get("email") ?? "";
  const linkCode = search.get("code") ?? "";
  const verify = useMutation({
    mutationFn: async (body: { email: string; code: string }) =>
      must(await api.POST("/auth/verify-email", { body })),
  });
  const started = useRef(false);
  useEffect(() => {
    // Opening the e-mail's link verifies by itself.
    if (email && linkCode && !started.current) {
      started.current = true;
      verify.mutate({ email, code: linkCode });
    }
  }, [email, linkCode, verify]);
  const error = verify.error;
  return (
    <section aria-labelledby="verify-title">
      <h1 id="verify-title">Verify your e-mail address</h1>
      {verify.isSuccess ? (
        <>
          <Status>Your e-mail address is verified.</Status>
          <p>
            <Link href={`/sign-in?email=${encodeURIComponent(email)}${nextParam(search)}`}>Sign in</Link>
          </p>
        </>
      ) : (
        <>
          <p>
            We sent a 6-digit code to {email || "your e-mail address"}. Enter it below, or open the link in
            the e-mail.
          </p>
          <form
            noValidate
            onSubmit={(event) => {
              const form = values(event);
              verify.mutate({ email: form.email ?? email, code: form.code ?? "" });
            }}
          >
            {!email && <Field label="Email" name="email" type="email" autoComplete="email" required />}
            {email && <input type="hidden" name="email" value={email} />}
            <Field
              label="Code"
              name="code"
              inputMode="numeric"
              autoComplete="one-time-code"
              defaultValue={linkCode}
              required
              error={fieldError(error, "code")}
            />
            <FormError error={error} fields={["code"]} />
            <button type="submit" disabled={verify.isPending}>
              Verify
            </button>
          </form>
        </>
      )}
    </section>
  );
}

export function SignIn() {
  const { search } = useLocation();
  const queryClient = useQueryClient();
  const [passkeyMessage, setPasskeyMessage] = useState("");
  /** The deletion date of an account whose owner chose to keep it scheduled. */
  const [keptScheduled, setKeptScheduled] = useState("");
  const next = search.get("next");
  const signIn = useMutation({
    mutationFn: async (body: { email: string; password: string; cancelDeletion?: boolean }) =>
      must(await api.POST("/auth/sign-in", { body })),
    onSuccess: async (data) => {
      queryClient.setQueryData(SESSION_KEY, data.users[0] ?? null);
      navigate(next?.startsWith("/") && !next.startsWith("//") ? next : "/");
    },
  });
  const passkey = useMutation({
    mutationFn: signInWithPasskey,
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: SESSION_KEY });
      navigate("/");
    },
    onError: (error) => {
      const at = scheduledDeletion(error);
      setPasskeyMessage(
        at
          ? `Your account is scheduled for deletion on ${longDate(at)}. To cancel the deletion, sign in with your password.`
          : errorText(error),
      );
    },
  });
  const error = signIn.error;
  const deletionAt = scheduledDeletion(error);
  const signedOutAt = search.get("deletionScheduledAt") ?? "";
  return (
    <section aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in</h1>
      {!Number.isNaN(Date.parse(signedOutAt)) && !keptScheduled && (
        <Status>
          Your account is scheduled for deletion on {longDate(signedOutAt)}, and you are signed out
          everywhere. To keep the account, sign in with your password before then.
        </Status>
      )}
      {keptScheduled && (
        <Status>
          Your account stays scheduled for deletion on {longDate(keptScheduled)}. You are not signed in.
        </Status>
      )}
      <form
        noValidate
        onSubmit={(event) => {
          const { email = "", password = "" } = values(event);
          setKeptScheduled("");
          setPasskeyMessage("");
          signIn.mutate({ email, password });
        }}
      >
        <Field
          label="Email"
          name="email"
          type="email"
          autoComplete="username webauthn"
          defaultValue={search.get("email") ?? ""}
          required
          error={fieldError(error, "email")}
        />
        <Field
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          error={fieldError(error, "password")}
        />
        {deletionAt && signIn.variables ? (
          <DeletionOffer
            at={deletionAt}
            pending={signIn.isPending}
            onCancelDeletion={() =>
              signIn.variables && signIn.mutate({ ...signIn.variables, cancelDeletion: true })
            }
            onKeep={() => {
              setKeptScheduled(deletionAt);
              signIn.reset();
            }}
          />
        ) : (
          <FormError error={error} fields={["email", "password"]} />
        )}
        <button type="submit" disabled={signIn.isPending}>
          Sign in
        </button>
      </form>
      <p>
        <Link href="/forgot-password">Forgot password?</Link>
      </p>
      <p>
        <button
          type="button"
          onClick={() => {
            signIn.reset();
            setPasskeyMessage("");
            passkey.mutate();
          }}
          disabled={passkey.isPending}
        >
          Sign in with a passkey
        </button>
      </p>
      {passkeyMessage && <p role="alert">{passkeyMessage}</p>}
      <p>
        No account yet? <Link href="/sign-up">Sign up</Link>
      </p>
    </section>
  );
}

export function ForgotPassword() {
  const forgot = useMutation({
    mutationFn: async (body: { email: string }) => must(await api.POST("/auth/forgot-password", { body })),
  });
  const [email, setEmail] = useState("");
  return (
    <section aria-labelledby="forgot-title">
      <h1 id="forgot-title">Forgot password</h1>
      {forgot.isSuccess ? (
        <>
          <Status>{forgot.data.message}</Status>
          <p>
            <Link href={`/reset-password?email=${encodeURIComponent(email)}`}>Enter the code</Link>
          </p>
        </>
      ) : (
        <form
          noValidate
          onSubmit={(event) => {
            const form = values(event);
            setEmail(form.email ?? "");
            forgot.mutate({ email: form.email ?? "" });
          }}
        >
          <Field
            label="Email"
            name="email"
            type="email"
            autoComplete="email"
            required
            error={fieldError(forgot.error, "email")}
          />
          <FormError error={forgot.error} fields={["email"]} />
          <button type="submit" disabled={forgot.isPending}>
            Send reset code
          </button>
        </form>
      )}
    </section>
  );
}

export function ResetPassword() {
  const { search } = useLocation();
  const passwordCheck = usePasswordCheck(RESET_INPUTS);
  const reset = useMutation({
    mutationFn: async (body: { email: string; code: string; password: string }) =>
      must(await api.POST("/auth/reset-password", { body })),
  });
  const error = reset.error;
  const email = search.get("email") ?? "";
  return (
    <section aria-labelledby="reset-title">
      <h1 id="reset-title">Reset password</h1>
      {reset.isSuccess ? (
        <>
          <Status>Your password is changed. {revokedSummary(reset.data.revoked)}</Status>
          <p>
            Browsers signed in before the reset must sign in again with the new password, and programs that
            used those API tokens or MCP grants need new ones.
          </p>
          <RecoveryPasskeys email={reset.variables.email} answer={reset.data} />
          <p>
            <Link href={`/sign-in?email=${encodeURIComponent(reset.variables.email)}${nextParam(search)}`}>
              Sign in
            </Link>
          </p>
        </>
      ) : (
        <form
          noValidate
          onSubmit={async (event) => {
            const form = event.currentTarget;
            const { email = "", code = "", password = "" } = values(event);
            if (await passwordCheck.beforeSubmit(form)) reset.mutate({ email, code, password });
          }}
        >
          <Field
            label="Email"
            name="email"
            type="email"
            autoComplete="email"
            defaultValue={email}
            required
            error={fieldError(error, "email")}
          />
          <Field
            label="Code"
            name="code"
            inputMode="numeric"
            autoComplete="one-time-code"
            defaultValue={search.get("code") ?? ""}
            required
            error={fieldError(error, "code")}
          />
          <NewPasswordField
            label="New password"
            name="password"
            check={passwordCheck}
            apiError={fieldError(error, "password")}
          />
          <FormError error={error} fields={["email", "code", "password"]} />
          <button type="submit" disabled={reset.isPending}>
            Set new password
          </button>
        </form>
      )}
    </section>
  );
}
