/**
 * The web application's URL (`APP_URL`) when the deployment gives it by reference.
 *
 * A deployment without an `appUrl` setting serves the console from its own CloudFront distribution,
 * whose domain CloudFormation cannot put in the functions' environment (functions -> distribution ->
 * REST API -> functions is a cycle: cdk/README.md, "APP_URL"). The home stack writes the
 * distribution's URL into an SSM parameter instead and gives the functions its name
 * (`APP_URL_PARAMETER`); a function that links to the console (the Core API's handlers, the MCP
 * endpoint, the e-mailing jobs) reads it once per container, before its first request, into
 * `APP_URL`. The data plane and the stream consumers never need it and never read it.
 */
import { resetConfig } from "#lib/config.ts";

let loading: Promise<void> | undefined;

async function load(): Promise<void> {
  const name = process.env.APP_URL_PARAMETER;
  if (process.env.APP_URL || !name) return;
  const { GetParameterCommand, SSMClient } = await import("@aws-sdk/client-ssm");
  const client = new SSMClient({ region: process.env.HOME_REGION ?? process.env.AWS_REGION });
  const answer = await client.send(new GetParameterCommand({ Name: name }));
  const value = answer.Parameter?.Value;
  if (!value || !URL.canParse(value)) throw new Error(`APP_URL_PARAMETER ${name} holds no URL`);
  process.env.APP_URL = value;
  // A configuration read before this (at import) would still have the local default.
  resetConfig();
}

/** Resolves APP_URL from its parameter if the deployment gave one (once; a failure is retried next time). */
export function loadAppUrl(): Promise<void> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
