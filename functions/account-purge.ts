/** Scheduled (EventBridge, hourly): purge clients and users whose deletion grace period ended. */
import { loadAppUrl } from "#lib/app-url.ts";
import { purgeDueAccounts } from "#lib/domain/account-deletion.ts";
import { log, logReady } from "#lib/log.ts";

export async function handler(): Promise<{ clients: number; users: number; failed: number }> {
  await logReady();
  await loadAppUrl();
  const result = await purgeDueAccounts();
  log.info("Account purge run", result);
  if (result.failed > 0) throw new Error(`${result.failed} scheduled purges failed; they stay queued`);
  return result;
}
