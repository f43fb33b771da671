/**
 * Passkeys (WebAuthn, discoverable credentials). The API (POST /auth/passkeys/...) is being built;
 * until it answers, signing in with a passkey says so.
 */
import { startAuthentication } from "@simplewebauthn/browser";

export const PASSKEYS_UNAVAILABLE = "Passkeys are not available yet";

export class PasskeyError extends Error {}

/** Signs in with a discoverable credential: options from the API, the browser's ceremony, then verify. */
export async function signInWithPasskey(): Promise<void> {
  const options = await fetch("/auth/passkeys/sign-in/options", {
    method: "POST",
    credentials: "same-origin",
  });
  if (options.status === 404) throw new PasskeyError(PASSKEYS_UNAVAILABLE);
  if (!options.ok) throw new PasskeyError(`Passkey sign-in failed (${options.status})`);
  const { options: optionsJSON } = (await options.json()) as {
    options: Parameters<typeof startAuthentication>[0]["optionsJSON"];
  };
  const response = await startAuthentication({ optionsJSON });
  const verified = await fetch("/auth/passkeys/sign-in", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ response }),
  });
  if (verified.status === 404) throw new PasskeyError(PASSKEYS_UNAVAILABLE);
  if (!verified.ok) throw new PasskeyError(`Passkey sign-in failed (${verified.status})`);
}
