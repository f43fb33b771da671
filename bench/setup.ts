/**
 * The bench's shared set-up (`npm run bench`, bench/profile.ts, bench/cpu.ts): the environment of
 * a throwaway table, the emulator (behind the keep-alive front unless asked not to), the local
 * stack, the bench's target on loopback, and an organisation configured through the Core API as a
 * user would: a token, the team plan (1,000 requests a minute per proxy credential), the target
 * and a bearer target credential.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { issueToken } from "#lib/domain/tokens.ts";
import { createUser } from "#lib/domain/users.ts";
import { startEmulator } from "#local/emulator.ts";
import { startLocalStack } from "#local/runner.ts";
import { setClientPlan } from "../cli/client-plan.ts";
import { type KeepAliveFront, startKeepAliveFront } from "./keep-alive-front.ts";

/** The Core API's answers the bench reads: wrapper arrays of items with ids. */
export type ApiBody = Record<string, Record<string, string>[]>;
export type Call = (method: string, path: string, body?: unknown) => Promise<ApiBody>;

/** The request header the target echoes as `x-bench-saw` (bench/transforms.ts: do request transforms run?). */
export const ECHOED_HEADER = "x-bench-transform";

export function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

/** The target: a small JSON answer, like a typical API; it echoes ECHOED_HEADER as `x-bench-saw`. */
export function targetServer(): Server {
  const body = JSON.stringify({ ok: true, items: [1, 2, 3], note: "benchmark target" });
  return createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const echoed = req.headers[ECHOED_HEADER];
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        ...(typeof echoed === "string" ? { "x-bench-saw": echoed } : {}),
      });
      res.end(body);
    });
  });
}

export interface BenchWorld {
  emulator: Awaited<ReturnType<typeof startEmulator>>;
  /** The keep-alive front the SDK reaches the emulator through (undefined with `keepAlive: false`). */
  front: KeepAliveFront | undefined;
  stack: Awaited<ReturnType<typeof startLocalStack>>;
  targetUrl: string;
  /** The Core API as the organisation's owner (throws on a status of 300 or more). */
  call: Call;
  /** `/api/clients/{clientId}` */
  api: string;
  targetId: string;
  targetCredentialId: string;
  /** Servers the caller started to stop with the rest. */
  servers: Server[];
  stop(): Promise<void>;
}

export async function startBenchWorld(options: {
  /** The table's prefix and the organisation's name. */
  name: string;
  regions: string[];
  keepAlive?: boolean;
}): Promise<BenchWorld> {
  const [home] = options.regions as [string];
  process.env.AWS_ACCESS_KEY_ID ??= "bench";
  process.env.AWS_SECRET_ACCESS_KEY ??= "bench";
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
  process.env.LOG_LEVEL = "silent";
  process.env.TABLE_NAME = `${options.name.toLowerCase()}-${randomBytes(3).toString("hex")}`;
  process.env.KMS_KEY_ALIAS = `alias/${process.env.TABLE_NAME}`;
  process.env.REGIONS = options.regions.join(",");
  process.env.HOME_REGION = home;
  const emulator = await startEmulator();
  const front = options.keepAlive === false ? undefined : await startKeepAliveFront(emulator.endpoint);
  process.env.AWS_ENDPOINT_URL = front?.endpoint ?? emulator.endpoint;
  const stack = await startLocalStack();
  const target = targetServer();
  const servers: Server[] = [target];
  const stop = async () => {
    for (const server of servers) {
      server.closeAllConnections?.();
      server.close();
    }
    await stack.stop();
    front?.stop();
    await emulator.stop();
  };
  try {
    const targetUrl = await listen(target);
    const user = await createUser({
      email: `${options.name.toLowerCase()}-${Date.now()}@example.test`,
      firstName: "Bench",
      lastName: "Mark",
    });
    const { token } = await issueToken(String(user.userId));
    const call: Call = async (method, path, body) => {
      const response = await fetch(`${stack.baseUrl}${path}`, {
        method,
        headers: { Authorization: token, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await response.json()) as ApiBody;
      if (response.status >= 300)
        throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const clientId = (await call("POST", "/api/clients", { clientName: options.name })).clients![0]!
      .clientId!;
    await setClientPlan(clientId, "team");
    const api = `/api/clients/${clientId}`;
    const targetId = (
      await call("POST", `${api}/targets`, {
        targetName: `${options.name} target`,
        targetRegion: home,
        targetBaseURL: targetUrl,
        targetTestPath: "/",
      })
    ).targets![0]!.targetId!;
    const targetCredentialId = (
      await call("POST", `${api}/credentials`, {
        credentialName: "upstream",
        credentialType: "target",
        authType: "bearer",
        region: home,
        secret: { token: "upstream-token" },
      })
    ).credentials![0]!.credentialId!;
    return { emulator, front, stack, targetUrl, call, api, targetId, targetCredentialId, servers, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
