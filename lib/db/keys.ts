/**
 * Every physical key of the table, in one place (docs/access-patterns.md is the table of access
 * patterns built on them). Nobody else writes "CLIENT#" + id.
 *
 * API responses show the spec's logical pKey/sKey values (for example a user's pKey is "USER"),
 * which the entity mappers in lib/domain set; the physical keys below spread the load over many
 * partitions instead of one hot "USER" or "INVITATION" partition.
 */
export interface Key {
  pKey: string;
  sKey: string;
}

const key = (pKey: string, sKey: string): Key => ({ pKey, sKey });

/** Sort-key prefixes inside a client's home partition (CLIENT#<clientId>). */
export const CLIENT_SK = {
  client: "CLIENT",
  config: "CONFIG",
  memberPrefix: "MEMBER#",
  invitePrefix: "INVITE#",
  inviteEmailPrefix: "INVITEEMAIL#",
  topUpPrefix: "TOPUP#",
} as const;

/** Sort-key prefixes inside a client's regional partition (CLIENT#<clientId> in a regional table). */
export const REGIONAL_SK = {
  credentialPrefix: "CREDENTIAL#",
  targetPrefix: "TARGET#",
  proxyPrefix: "PROXY#",
  rulePrefix: "RULE#",
  meterPrefix: "METER#",
  requestTransformPrefix: "TRANSFORM#REQUEST#",
  responseTransformPrefix: "TRANSFORM#RESPONSE#",
  aliasPrefix: "ALIAS#",
  /** A proxy's filters and overrides (docs/filters.md): `POLICY#<proxyId>#FILTERS`, `...#OVERRIDES`. */
  policyPrefix: "POLICY#",
} as const;

export const keys = {
  // ---- home region: accounts ----
  user: (userId: string) => key(`USER#${userId}`, "USER"),
  /** Uniqueness lock and look-up of a user by (lower-cased) e-mail. */
  userEmail: (email: string) => key(`EMAIL#${email.toLowerCase()}`, "USER"),
  /** A user API token, addressed by the SHA-256 of the raw token (the raw token is never stored). */
  userToken: (tokenHash: string) => key(`TOKEN#${tokenHash}`, "TOKEN"),
  /** A user's sign-in account (password hash, e-mail verified), beside the user item (docs/accounts.md). */
  userAccount: (userId: string) => key(`USER#${userId}`, "ACCOUNT"),
  /** A user's one pending e-mail code of a purpose (verification, password reset), replaced by a new one. */
  accountCode: (userId: string, purpose: "verify" | "reset") => key(`USER#${userId}`, `CODE#${purpose}`),
  /** A sign-in session of a user, addressed by the SHA-256 of its secret (the cookie holds the secret). */
  session: (userId: string, secretHash: string) => key(`USER#${userId}`, `SESSION#${secretHash}`),
  /** A browser the user signed in from, addressed by the SHA-256 of its device cookie (new-browser notice). */
  userDevice: (userId: string, deviceHash: string) => key(`USER#${userId}`, `DEVICE#${deviceHash}`),
  /**
   * A password reset's recovery token (docs/accounts.md#recovery-ends-every-way-in), by the SHA-256 of the token: it lets its holder
   * remove the user's passkeys for 24 hours (the token is only in the reset's answer and e-mail).
   */
  recoveryToken: (userId: string, tokenHash: string) => key(`USER#${userId}`, `RECOVERY#${tokenHash}`),
  /**
   * An MCP OAuth grant of a user, by grant id (docs/accounts.md#recovery-ends-every-way-in): how a reset, a password change or a
   * deletion finds the user's grants to revoke them (one Query of the user's partition).
   */
  userOAuthGrant: (userId: string, grantId: string) => key(`USER#${userId}`, `OAUTHGRANT#${grantId}`),
  /** The sign-in failures of an address in its current 15-minute window (the lockout). */
  signInFailures: (email: string) => key(`SIGNIN#${email.toLowerCase()}`, "FAILURES"),

  clientPartition: (clientId: string) => `CLIENT#${clientId}`,
  client: (clientId: string) => key(`CLIENT#${clientId}`, CLIENT_SK.client),
  clientConfig: (clientId: string) => key(`CLIENT#${clientId}`, CLIENT_SK.config),
  /** One top-up of a managed client's budget, by its sequence number (its claim and its record). */
  clientTopUp: (clientId: string, sequence: number) =>
    key(`CLIENT#${clientId}`, `${CLIENT_SK.topUpPrefix}${String(sequence).padStart(8, "0")}`),
  member: (clientId: string, userId: string) =>
    key(`CLIENT#${clientId}`, `${CLIENT_SK.memberPrefix}${userId}`),
  invite: (clientId: string, inviteId: string) =>
    key(`CLIENT#${clientId}`, `${CLIENT_SK.invitePrefix}${inviteId}`),
  /** One pending invite per (client, e-mail): this lock item makes a second one a conditional-write failure. */
  inviteEmailLock: (clientId: string, email: string) =>
    key(`CLIENT#${clientId}`, `${CLIENT_SK.inviteEmailPrefix}${email.toLowerCase()}`),
  /** GSI1 keys of an invite: list and find invites addressed to an e-mail. */
  inviteByEmailIndex: (email: string, inviteId: string) => ({
    gsi1pk: `EMAIL#${email.toLowerCase()}`,
    gsi1sk: `INVITE#${inviteId}`,
  }),
  /** Tombstone kept after a client is purged: billing and legal records survive deletion. */
  deletedClient: (clientId: string) => key(`DELETEDCLIENT#${clientId}`, "CLIENT"),

  // notifications: newest first because notification ids are UUIDv7 (time-ordered)
  systemNotificationPartition: () => "NOTIFY#SYSTEM",
  userNotificationPartition: (userId: string) => `NOTIFY#USER#${userId}`,
  clientNotificationPartition: (clientId: string) => `NOTIFY#CLIENT#${clientId}`,
  /** Per-user read receipt of a system (platform-wide) notification. */
  systemNotificationReceipt: (userId: string, notificationId: string) =>
    key(`NOTIFYREAD#${userId}`, notificationId),

  /**
   * Fixed-window counter of a rate-limited principal (user token, proxy credential, an OAuth
   * registration's source address), or of the OAuth clients registered in an hour still pending
   * (`OAUTHPENDING`).
   */
  rateWindow: (principal: string, windowStart: number) => key(`RATE#${principal}`, String(windowStart)),

  // MSPs
  msp: (mspId: string) => key(`MSP#${mspId}`, "MSP"),
  mspConfig: (mspId: string) => key(`MSP#${mspId}`, "CONFIG"),
  mspMember: (mspId: string, userId: string) => key(`MSP#${mspId}`, `MEMBER#${userId}`),
  mspClient: (mspId: string, clientId: string) => key(`MSP#${mspId}`, `CLIENT#${clientId}`),
  mspInvite: (mspId: string, inviteId: string) => key(`MSP#${mspId}`, `INVITE#${inviteId}`),
  mspInviteEmailLock: (mspId: string, email: string) =>
    key(`MSP#${mspId}`, `INVITEEMAIL#${email.toLowerCase()}`),
  /** GSI1 keys of an MSP invite: beside the client invites addressed to the same e-mail, apart by prefix. */
  mspInviteByEmailIndex: (email: string, inviteId: string) => ({
    gsi1pk: `EMAIL#${email.toLowerCase()}`,
    gsi1sk: `MSPINVITE#${inviteId}`,
  }),

  // deletion work queue (GSI2), ordered by the time the purge is due
  deletionQueue: (kind: "CLIENT" | "USER", dueAtIso: string) => ({
    gsi2pk: `DELETION#${kind}`,
    gsi2sk: dueAtIso,
  }),

  // ---- regional tables: region-bound resources of a client ----
  credential: (clientId: string, credentialId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.credentialPrefix}${credentialId}`),
  target: (clientId: string, targetId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.targetPrefix}${targetId}`),
  proxy: (clientId: string, proxyId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.proxyPrefix}${proxyId}`),
  proxyAlias: (clientId: string, alias: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.aliasPrefix}${alias}`),
  rule: (clientId: string, parentId: string, ruleId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.rulePrefix}${parentId}#${ruleId}`),
  meter: (clientId: string, proxyId: string, meterId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.meterPrefix}${proxyId}#${meterId}`),
  transform: (clientId: string, kind: "request" | "response", proxyId: string, transformId: string) =>
    key(
      `CLIENT#${clientId}`,
      `${kind === "request" ? REGIONAL_SK.requestTransformPrefix : REGIONAL_SK.responseTransformPrefix}${proxyId}#${transformId}`,
    ),
  /** A proxy's filters (IP lists, header and payload filters), one item per proxy. */
  proxyFilters: (clientId: string, proxyId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.policyPrefix}${proxyId}#FILTERS`),
  /** A proxy's path-prefix overrides (timeout, additional headers), one item per proxy. */
  proxyOverrides: (clientId: string, proxyId: string) =>
    key(`CLIENT#${clientId}`, `${REGIONAL_SK.policyPrefix}${proxyId}#OVERRIDES`),
  /**
   * The count of a proxy's transforms of one kind (lib/db/entities/transform.ts): here, beside the
   * transform key, because the data plane's cold start reads it (runtime-config.ts) without
   * loading the transform entity.
   */
  transformCount: (clientId: string, kind: "request" | "response", proxyId: string) =>
    keys.transform(clientId, kind, proxyId, "#COUNT"),
  /**
   * The data plane's entry point: proxy id -> client id (the proxy's own key needs the client id,
   * which the data-plane URL does not carry). Written with the proxy, deleted with it.
   */
  proxyRuntime: (proxyId: string) => key(`PROXYRT#${proxyId}`, "RUNTIME"),
  /**
   * A client's data-plane state in one regional table: `configVersion` (incremented by every change
   * to the client's regional resources, so a warm data plane revalidates its cached configuration
   * with one GetItem), and the billing status and plan tier copied from the home region.
   */
  clientRuntime: (clientId: string) => key(`CLIENT#${clientId}`, "RUNTIME"),
  /** Request log records of a proxy; request ids are UUIDv7, so the sort key orders by time. */
  requestLogPartition: (proxyId: string) => `REQLOG#${proxyId}`,
  requestLog: (proxyId: string, requestId: string) => key(`REQLOG#${proxyId}`, requestId),
  /** Telemetry buckets; the sort key is the bucket (YYYY-MM-DD-HH-MM, ...-HH, ...-DD, YYYY-MM). */
  clientTelemetryPartition: (clientId: string, interval: string) =>
    `TELEMETRY#CLIENT#${clientId}#${interval}`,
  proxyTelemetryPartition: (proxyId: string, interval: string) => `TELEMETRY#PROXY#${proxyId}#${interval}`,
  clientTelemetry: (clientId: string, interval: string, bucket: string) =>
    key(`TELEMETRY#CLIENT#${clientId}#${interval}`, bucket),
  proxyTelemetry: (proxyId: string, interval: string, bucket: string) =>
    key(`TELEMETRY#PROXY#${proxyId}#${interval}`, bucket),
  /**
   * Accumulated value of one meter in one calendar window (lib/shared/meter-windows.ts): sKey
   * `<window>#<windowStartMs>`. A per-caller meter (`limitBy`) has one partition per caller:
   * `METERUSE#<meterId>#<callerHash>` (callerHash in windows.ts).
   */
  meterWindow: (meterId: string, window: string, windowStartMs: number, callerHash?: string) =>
    key(
      callerHash === undefined ? `METERUSE#${meterId}` : `METERUSE#${meterId}#${callerHash}`,
      `${window}#${windowStartMs}`,
    ),
  /**
   * Meter alert occurrences of one cadence period (docs/meters.md, "Alert digests"), spread over
   * OCCURRENCE_SHARDS partitions by meter id: the digest job Queries each shard of a period that
   * ended, the stream consumer ADDs to one item per (client, meter, trigger).
   */
  meterOccurrencePartition: (cadence: string, periodStart: number, shard: number) =>
    `METERALERT#${cadence}#${periodStart}#${shard}`,
  meterOccurrence: (
    cadence: string,
    periodStart: number,
    shard: number,
    clientId: string,
    meterId: string,
    trigger: string,
  ) => key(`METERALERT#${cadence}#${periodStart}#${shard}`, `${clientId}#${meterId}#${trigger}`),
  /**
   * A stream record already applied by one processor (TTL-bound): the idempotency marker written in
   * the same transaction as the processor's ADDs, so a redelivered record is counted once.
   */
  streamRecordMark: (eventId: string, processor: string) => key(`STREAMREC#${eventId}`, processor),
  /**
   * A part of a stream batch already applied by one processor (TTL-bound): `digest` is the SHA-256
   * of the part's records (event ids and sequence numbers), written in the same transaction as the
   * part's ADDs, so the same part delivered again is counted once (docs/telemetry.md).
   */
  streamBatchMark: (digest: string, processor: string) => key(`STREAMBATCH#${digest}`, processor),
  /** Home table: the digest periods of a cadence already delivered; the sort key is the period start (ms, 13 digits). */
  meterDigestRunPartition: (cadence: string) => `METERDIGEST#${cadence}`,
  meterDigestRun: (cadence: string, periodStart: number) =>
    key(`METERDIGEST#${cadence}`, String(periodStart).padStart(13, "0")),
  /** Single-use OAuth2 authorization state (TTL-bound). */
  oauthState: (state: string) => key(`OAUTHSTATE#${state}`, "STATE"),
  /**
   * The MCP endpoint's OAuth authorization server (docs/mcp-oauth.md), home table: a dynamically
   * registered client, an authorization code (by its SHA-256; single use, TTL 60 s) and a grant
   * (the refresh token's family, by grant id; the current refresh token's SHA-256 on the item).
   */
  oauthClient: (clientId: string) => key(`OAUTHCLIENT#${clientId}`, "CLIENT"),
  oauthCode: (codeHash: string) => key(`OAUTHCODE#${codeHash}`, "CODE"),
  oauthGrant: (grantId: string) => key(`OAUTHGRANT#${grantId}`, "GRANT"),
  /** A refresh token of the grant that was rotated away (by its SHA-256): a replay of it is evidence. */
  oauthRotatedRefresh: (grantId: string, tokenHash: string) =>
    key(`OAUTHGRANT#${grantId}`, `ROTATED#${tokenHash}`),
  /** Cached token of a customToken / oauth2 target credential (encrypted, TTL-bound). */
  credentialTokenCache: (credentialId: string) => key(`CREDTOKEN#${credentialId}`, "TOKEN"),
};

/** The partitions a client owns in a regional table, besides its own CLIENT#<id> partition. */
export function clientOwnedRegionalPartitions(clientId: string): string[] {
  return ["minute", "hour", "day", "month"].map((interval) =>
    keys.clientTelemetryPartition(clientId, interval),
  );
}

/** The partitions a proxy owns in its regional table. */
export function proxyOwnedRegionalPartitions(proxyId: string): string[] {
  return [
    keys.proxyRuntime(proxyId).pKey,
    keys.requestLogPartition(proxyId),
    ...["minute", "hour", "day", "month"].map((interval) => keys.proxyTelemetryPartition(proxyId, interval)),
  ];
}

/**
 * Partitions a meter owns: its shared window counters. Per-caller counters
 * (`METERUSE#<meterId>#<callerHash>`) cannot be listed without a Scan; they expire by their TTL
 * (an hour after their window ends).
 */
export function meterOwnedRegionalPartitions(meterId: string): string[] {
  return [`METERUSE#${meterId}`];
}
