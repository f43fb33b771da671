/**
 * Whether a cached configuration may decide a request (docs/data-plane.md "Freshness"). Loaded on
 * demand at the first count (not at a cold start).
 *
 * A configuration is cached in the warm instance with the client's `configVersion` it was loaded
 * at; every change of what the data plane enforces bumps that version (the client runtime item).
 * - strict (the default): before a request is counted, one strongly consistent GetItem of the
 *   client's runtime item (projected to `configVersion`); a moved version reloads the configuration
 *   and decides again. A change stops traffic on the next request.
 * - relaxed: no store call on the caller's wait while the version this instance last read is
 *   younger than the bound (`DATA_PLANE_FRESHNESS_MS`, default 1,000 ms); after an answer the
 *   version is read again once it is older than half the bound, so a steady stream never reads it
 *   on the wait. A change stops traffic within the bound (plus one store read).
 * A configuration read during the request itself is current: no check.
 */
import { dynamo } from "#lib/aws/clients.ts";
import { GetCommand } from "#lib/aws/document-client.ts";
import { keys } from "#lib/db/keys.ts";
import { tableName } from "#lib/db/store.ts";

export type FreshnessMode = "strict" | "relaxed";

export interface FreshnessSettings {
  mode: FreshnessMode;
  /** relaxed: the longest a version read is trusted without reading it again (ms). */
  boundMs: number;
}

export const DEFAULT_FRESHNESS_MS = 1000;

/** The setting, from `DATA_PLANE_FRESHNESS` (strict|relaxed) and `DATA_PLANE_FRESHNESS_MS`. */
export function freshnessSettings(env: Record<string, string | undefined> = process.env): FreshnessSettings {
  const raw = env.DATA_PLANE_FRESHNESS?.trim().toLowerCase();
  if (raw && raw !== "strict" && raw !== "relaxed")
    throw new Error(`DATA_PLANE_FRESHNESS must be strict or relaxed, not ${raw}`);
  const bound = env.DATA_PLANE_FRESHNESS_MS === undefined ? NaN : Number(env.DATA_PLANE_FRESHNESS_MS);
  return {
    mode: raw === "relaxed" ? "relaxed" : "strict",
    boundMs: Number.isFinite(bound) && bound > 0 ? bound : DEFAULT_FRESHNESS_MS,
  };
}

/** The client's current configVersion in the region (0 when it has none): one consistent GetItem. */
export async function readConfigVersion(region: string, clientId: string): Promise<number> {
  const out = await dynamo(region).send(
    new GetCommand({
      TableName: tableName(),
      Key: keys.clientRuntime(clientId),
      ConsistentRead: true,
      ProjectionExpression: "configVersion",
    }),
  );
  const version = out.Item?.configVersion;
  return typeof version === "number" ? version : 0;
}

const MAX_CLIENTS = 2000;

/** The versions this data-plane object read, per client. */
export class Freshness {
  private readonly read = new Map<string, { version: number; at: number }>();
  private readonly refreshing = new Map<string, Promise<void>>();

  constructor(
    private readonly region: string,
    readonly settings: FreshnessSettings,
    private readonly now: () => number = Date.now,
    private readonly readVersion: typeof readConfigVersion = readConfigVersion,
  ) {}

  /**
   * Whether a configuration loaded at `version` may decide the request now. `fresh`: it was read
   * during this request (current by construction).
   */
  async isCurrent(clientId: string, version: number, fresh: boolean): Promise<boolean> {
    if (fresh) {
      this.remember(clientId, version);
      return true;
    }
    if (this.settings.mode === "relaxed") {
      const known = this.read.get(clientId);
      if (known && this.now() - known.at < this.settings.boundMs) return known.version === version;
    }
    const at = this.now();
    const current = await this.readVersion(this.region, clientId);
    this.remember(clientId, current, at);
    return current === version;
  }

  /**
   * After an answer (relaxed mode): read the version again when the last read is older than half
   * the bound. Never throws (the next request reads it on its wait once the bound has passed).
   */
  async refresh(clientId: string): Promise<void> {
    if (this.settings.mode !== "relaxed") return;
    const known = this.read.get(clientId);
    if (known && this.now() - known.at < this.settings.boundMs / 2) return;
    const running = this.refreshing.get(clientId);
    if (running) return running;
    const at = this.now();
    const refresh = this.readVersion(this.region, clientId)
      .then((version) => this.remember(clientId, version, at))
      .catch(() => undefined)
      .finally(() => this.refreshing.delete(clientId));
    this.refreshing.set(clientId, refresh);
    return refresh;
  }

  /** `at`: when the read began (the version is known current as of then). */
  private remember(clientId: string, version: number, at = this.now()): void {
    if (this.read.size >= MAX_CLIENTS && !this.read.has(clientId)) this.read.clear();
    this.read.set(clientId, { version, at });
  }
}
