/**
 * AWS credentials from the environment only: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, when
 * set, AWS_SESSION_TOKEN and AWS_CREDENTIAL_EXPIRATION. Lambda puts its role's credentials there;
 * the local stack, the tests and the bench set them for the emulator.
 *
 * The data-plane bundle replaces `@aws-sdk/credential-provider-node` (the SDK's default chain:
 * environment, SSO, ini files, process, web identity, container and instance metadata, with their
 * STS/SSO clients, about 90 KiB minified) by this module (esbuild alias, cdk/bundle.ts), so it
 * exports the `defaultProvider` name the SDK clients' runtime configuration imports. Unbundled code
 * (local stack, tests, CLI) keeps the SDK's own chain, whose first link is the same environment.
 */
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";

/** The credentials in `env`; throws, naming the variables, when the key id or secret is missing. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): AwsCredentialIdentity {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw Object.assign(
      new Error(
        "No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set in the environment",
      ),
      { name: "CredentialsProviderError", tryNextLink: false },
    );
  }
  const expiration = env.AWS_CREDENTIAL_EXPIRATION ? new Date(env.AWS_CREDENTIAL_EXPIRATION) : undefined;
  return {
    accessKeyId,
    secretAccessKey,
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    ...(expiration ? { expiration } : {}),
  };
}

/** A credential provider reading the environment at each call (the SDK memoises the answer). */
export function fromEnvironment(): AwsCredentialIdentityProvider {
  return async () => credentialsFromEnv();
}

/** Stand-in for `@aws-sdk/credential-provider-node`'s `defaultProvider` in the data-plane bundle. */
export const defaultProvider = (_init?: unknown): AwsCredentialIdentityProvider => fromEnvironment();
