/**
 * The meters case of the bench (issue 9): a proxy with its own apiKey caller credential, and the
 * bench's three meters on it (two limited `request_count`, one `response_value`). bench/bundled.ts
 * measures it beside the same proxy without meters, through the bundled handler.
 */

type Call = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<Record<string, Record<string, string>[]>>;

/** What creating a proxy through the Core API needs. */
export interface ProxyInput {
  call: Call;
  /** `/api/clients/{clientId}` */
  api: string;
  region: string;
  targetId: string;
  targetCredentialId: string;
}

/** A proxy with its own apiKey caller credential, on the bench's target (the meters and transforms cases). */
export async function proxyWithKey(input: ProxyInput, name: string) {
  const key = `${name}-${Math.random().toString(36).slice(2)}-caller-key`;
  const credentialId = (
    await input.call("POST", `${input.api}/credentials`, {
      credentialName: name,
      credentialType: "proxy",
      authType: "apiKey",
      region: input.region,
      secret: { keyName: "x-api-key", keyValue: key },
    })
  ).credentials![0]!.credentialId!;
  const proxyId = (
    await input.call("POST", `${input.api}/proxies`, {
      proxyName: name,
      proxyRegion: input.region,
      proxyProxyCredentialId: credentialId,
      proxyTargetId: input.targetId,
      proxyTargetCredentialId: input.targetCredentialId,
    })
  ).proxies![0]!.proxyId!;
  return { proxyId, headers: { "x-api-key": key } };
}

/**
 * The bench's three meters on a proxy: two limited `request_count` (one conditional on GET) and
 * one `response_value`, with limits far above what the bench sends (they count, never refuse).
 */
export async function addBenchMeters(input: Pick<ProxyInput, "call" | "api">, proxyId: string) {
  const meters = `${input.api}/proxies/${proxyId}/meters`;
  await input.call("POST", meters, {
    meterType: "request_count",
    meterActive: true,
    limits: { minute: 1e6, day: 1e8 },
  });
  await input.call("POST", meters, {
    meterType: "request_count",
    meterActive: true,
    meterMode: "conditional",
    effect: "include",
    methods: ["GET"],
    limits: { hour: 1e7 },
  });
  await input.call("POST", meters, {
    meterType: "response_value",
    meterActive: true,
    extraction: { location: "body", path: "items.0", defaultValue: 1 },
    limits: { month: 1e9 },
  });
}
