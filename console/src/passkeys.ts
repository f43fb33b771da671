/**
 * Passkeys (WebAuthn, discoverable credentials: docs/accounts.md, "Passkeys"). Both ceremonies go
 * through the typed client: options (with a challenge id) from the API, the browser's ceremony
 * (@simplewebauthn/browser), then the response with the challenge id back to the API.
 */
import { startAuthentication, startRegistration } from "@simplewebauthn/browser";
import { api } from "./api/client";
import { apiError } from "./api/errors";

export class PasskeyError extends Error {}

const failure = (error: unknown, fallback: string) =>
  new PasskeyError(
    typeof error === "object" && error !== null && "message" in error && typeof error.message === "string"
      ? error.message
      : fallback,
  );

/** Signs in with a discoverable credential; the API sets the session cookie. */
export async function signInWithPasskey(): Promise<void> {
  const started = await api.POST("/auth/passkeys/authentication-options");
  if (!started.data) throw failure(started.error, "Passkey sign-in could not start");
  const { challengeId, options } = started.data;
  const response = await startAuthentication({
    optionsJSON: options as Parameters<typeof startAuthentication>[0]["optionsJSON"],
  });
  const verified = await api.POST("/auth/passkeys/authentication", {
    body: { challengeId, response: response as never },
  });
  // The API's refusal as it came (its status and body: a 409 for an account scheduled for deletion).
  if (!verified.data) throw apiError(verified.response, verified.error);
}

/** Adds a passkey to the signed-in user's account. */
export async function addPasskey(name?: string): Promise<void> {
  const started = await api.POST("/auth/passkeys/registration-options");
  if (!started.data) throw failure(started.error, "Adding a passkey could not start");
  const { challengeId, options } = started.data;
  const response = await startRegistration({
    optionsJSON: options as Parameters<typeof startRegistration>[0]["optionsJSON"],
  });
  const registered = await api.POST("/auth/passkeys/registration", {
    body: { challengeId, response: response as never, ...(name ? { name } : {}) },
  });
  if (!registered.data) throw failure(registered.error, "The passkey could not be added");
}
