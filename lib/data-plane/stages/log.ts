/**
 * Stage 6, log: the request log record of spec 2.11 (lib/data-plane/request-log.ts builds it, with
 * every secret the request used redacted), written after the answer has been handed back, in one
 * write with the settlement of the request's meters (settlementSteps in meter-settlement.ts): a TransactWriteItems when there
 * is something to settle (idempotent under an SDK retry by its ClientRequestToken; its code is
 * loaded with the settlement, on demand), else a PutItem. A record that cannot be written is never a silent loss: the error line counts in a
 * metric that raises an alarm.
 */
import { dynamo } from "#lib/aws/clients.ts";
import { PutCommand } from "#lib/aws/document-client.ts";
import type { Answer, RequestContext } from "#lib/data-plane/context.ts";
import type { CounterStep } from "#lib/data-plane/counters.ts";
import type { LoadedCredential } from "#lib/data-plane/runtime-config.ts";
import { tableName } from "#lib/db/store.ts";
import { loadOnce } from "#lib/lazy.ts";
import { ALARMED_METRICS, describeError, log, metricFields } from "#lib/log.ts";
import { credentialHeaderNames, credentialQueryParamNames } from "#lib/vault/apply-credential.ts";
import type { AuthType } from "#lib/vault/secret-schemas.ts";

export const requestLogModule = loadOnce(() => import("#lib/data-plane/request-log.ts"));
const secretRedactionModule = loadOnce(() => import("#lib/vault/secret-redaction.ts"));
const settlementModule = loadOnce(() => import("#lib/data-plane/meter-settlement.ts"));

/**
 * The request log item of this request, or undefined when there is no proxy to file it under.
 * Built after the answer, so the log's building and redaction code is loaded then (on demand), not
 * at a cold start.
 */
export async function requestLogItem(ctx: RequestContext, answer: Answer, answeredAt: number) {
  const runtime = ctx.runtime;
  if (!runtime) return undefined;
  const [{ buildRequestLogItem }, { secretValues }] = await Promise.all([
    requestLogModule(),
    secretRedactionModule(),
  ]);
  const credentials = [runtime.proxyCredential, runtime.targetCredential].filter(
    (credential): credential is LoadedCredential => credential !== undefined,
  );
  const namesOf = (pick: typeof credentialHeaderNames) =>
    credentials.flatMap((credential) =>
      pick(credential.item.credentialAuthType as AuthType, credential.secret as never),
    );
  const item = buildRequestLogItem({
    requestId: ctx.requestId,
    proxy: { proxyId: runtime.proxyId, clientId: runtime.clientId, userId: runtime.proxy.userId },
    proxyIdFromPath: ctx.proxyId,
    stage: ctx.request.stage,
    method: ctx.request.method,
    apiPath: ctx.apiPath,
    query: ctx.query,
    requestHeaders: ctx.request.headers,
    requestBody: ctx.request.body,
    receivedAt: ctx.receivedAt,
    sentAt: answeredAt,
    status: answer.response.status,
    code: answer.outcome.code,
    message: answer.outcome.message,
    arnBase: ctx.request.arnBase,
    sourceIp: ctx.request.sourceIp,
    target: ctx.target
      ? {
          sentAt: ctx.target.sentAt,
          receivedAt: ctx.target.receivedAt,
          status: ctx.target.status,
          location: ctx.target.location,
          // The response as answered: a response transform's result when one ran.
          responseHeaders: ctx.transforms?.response?.headers ?? ctx.target.headers,
          responseBody: ctx.transforms?.response?.body ?? ctx.target.body,
        }
      : null,
    validation: ctx.validation,
    processed: ctx.processed,
    transformSuspension: ctx.transforms?.suspension,
    redactHeaders: namesOf(credentialHeaderNames),
    redactQuery: namesOf(credentialQueryParamNames),
    // Every secret the request used, wherever a target echoes it (issue 7).
    secretValues: requestSecretValues(ctx, secretValues),
  });
  return ctx.metering ? { ...item, metering: ctx.metering } : item;
}

/**
 * Every secret the request used (issue 7, issue 19): the secret values of the proxy and target
 * credentials and the token fetched for the target (customToken, oauth2). The one list that the
 * request log and a redacted answer (answer-redaction.ts) redact. `values` is secretValues of
 * lib/vault/secret-redaction.ts, passed in so this module does not load it at a cold start.
 */
export const requestSecretValues = (
  ctx: RequestContext,
  values: (authType: string, secret: unknown) => string[],
): (string | undefined)[] => [
  ...[ctx.runtime?.proxyCredential, ctx.runtime?.targetCredential].flatMap((credential) =>
    credential ? values(credential.item.credentialAuthType, credential.secret) : [],
  ),
  // undefined when the target credential fetches none: the redactor skips it
  ctx.dynamicToken,
];

/** Write the log record and the settlement in one write (see the module comment). */
export async function writeLogAndSettlement(
  region: string,
  ctx: RequestContext,
  item: Record<string, unknown> | undefined,
  settlement: readonly CounterStep[],
): Promise<void> {
  try {
    if (settlement.length === 0) {
      if (item) await dynamo(region).send(new PutCommand({ TableName: tableName(), Item: item }));
      return;
    }
    await (await settlementModule()).writeSettlement(region, ctx.requestId, item, settlement);
  } catch (error) {
    log.error("Request log could not be written", {
      ...describeError(error),
      requestId: ctx.requestId,
      ...metricFields(ALARMED_METRICS.requestLogWriteFailures, "data-plane"),
    });
  }
}
