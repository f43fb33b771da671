/** Scheduled (EventBridge, hourly): purge clients and users whose deletion grace period ended. */
import { loadAppUrl } from "#lib/app-url.ts";
import { purgeDueAccounts } from "#lib/domain/account-deletion.ts";
import { log, logReady } from "#lib/log.ts";

export async function handler(): Promise<{ clients: number; users: number; failed: number }> {
  await logReady();
  await loadAppUrl();
  const result = await purgeDueAccounts();
  // An hourly run is routine (debug); one that purged something is news (info, and each purge
  // has its own line).
  log[result.clients + result.users > 0 ? "info" : "debug"]("Account purge run", result);
  if (result.failed > 0) throw new Error(`${result.failed} scheduled purges failed; they stay queued`);
  return result;
}
