/**
 * The meters case of `npm run bench` (issue 9): a proxy with two limited `request_count` meters and
 * one `response_value` meter, beside the same proxy without meters, measured in the same run:
 * - store calls per warm request, split at the moment the caller has the answer: before (the
 *   caller waits for them) and after (the settlement and the request log, written after the
 *   answer was handed back). Goal: one transaction before, at most one write after;
 * - the caller's p50/p99 on one connection;
 * - an accuracy run: 200 concurrent requests at a limit of 50, and how many passed (goal: 50).
 * A benchmark, not a test: it asserts nothing.
 */
import autocannon from "autocannon";
import { createDataPlane } from "#lib/data-plane/pipeline.ts";

type Call = (
  method: string,
  path: string,
  body?: unknown,
) => Promise<Record<string, Record<string, string>[]>>;

export interface CallCounter {
  reset(): void;
  snapshot(): Map<string, number>;
}

export interface MetersBenchInput {
  call: Call;
  /** `/api/clients/{clientId}` */
  api: string;
  region: string;
  dataPlane: string;
  targetId: string;
  targetCredentialId: string;
  counter: CallCounter;
  sample: number;
}

const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

/** A proxy with its own apiKey caller credential, on the bench's target (the meters and transforms cases). */
export async function proxyWithKey(
  input: Pick<MetersBenchInput, "call" | "api" | "region" | "targetId" | "targetCredentialId">,
  name: string,
) {
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
 * Store calls before and after the answer, per warm request (mean of `sample`): the data plane's
 * own `serve` (everything up to the answer) and `finish` (what runs after the answer is handed
 * back), counted by the SDK middleware; the same pipeline the function URL handler runs.
 */
async function callsAroundAnswer(input: MetersBenchInput, proxyId: string, headers: Record<string, string>) {
  const plane = createDataPlane(input.region);
  const request = () => ({
    method: "GET",
    path: `/api/${proxyId}/items`,
    rawQuery: "page=1",
    headers: { ...headers },
    sourceIp: "127.0.0.1",
    stage: "$default",
    arnBase: "arn:aws:lambda:bench",
  });
  for (let i = 0; i < 5; i++) await plane.handle(request());
  let before = 0;
  let after = 0;
  const commands = new Map<string, number>();
  const add = (when: string, counts: Map<string, number>) => {
    for (const [command, count] of counts)
      commands.set(`${when} ${command}`, (commands.get(`${when} ${command}`) ?? 0) + count);
  };
  for (let i = 0; i < input.sample; i++) {
    input.counter.reset();
    const served = await plane.serve(request());
    const atAnswer = input.counter.snapshot();
    input.counter.reset();
    await served.finish();
    const afterAnswer = input.counter.snapshot();
    before += total(atAnswer);
    after += total(afterAnswer);
    add("before:", atAnswer);
    add("after:", afterAnswer);
  }
  return {
    before: before / input.sample,
    after: after / input.sample,
    commands: [...commands].map(([command, count]) => `${command} ${(count / input.sample).toFixed(2)}`),
  };
}

async function latency(url: string, headers: Record<string, string>) {
  await autocannon({ url, connections: 2, amount: 20, headers });
  const single = await autocannon({ url, connections: 1, amount: 200, headers });
  return { p50: single.latency.p50, p99: single.latency.p99, non2xx: single.non2xx };
}

export async function benchMeters(
  input: MetersBenchInput,
): Promise<{ lines: string[]; metered: { url: string; headers: Record<string, string> } }> {
  const plain = await proxyWithKey(input, "bench-no-meters");
  const metered = await proxyWithKey(input, "bench-meters");
  const meters = `${input.api}/proxies/${metered.proxyId}/meters`;
  // Limits far above what the bench sends: the meters count on every request, never refuse.
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
  const url = (proxyId: string) => `${input.dataPlane}/api/${proxyId}/items?page=1`;

  const plainCalls = await callsAroundAnswer(input, plain.proxyId, plain.headers);
  const meteredCalls = await callsAroundAnswer(input, metered.proxyId, metered.headers);
  const plainLatency = await latency(url(plain.proxyId), plain.headers);
  const meteredLatency = await latency(url(metered.proxyId), metered.headers);

  // Accuracy: 200 concurrent requests at a limit of 50 (a fresh proxy and meter).
  const exact = await proxyWithKey(input, "bench-accuracy");
  await input.call("POST", `${input.api}/proxies/${exact.proxyId}/meters`, {
    meterType: "request_count",
    meterActive: true,
    meterMode: "conditional",
    effect: "include",
    methods: ["GET"],
    limits: { day: 50 },
  });
  // Warm the configuration with a request the meter does not count (OPTIONS).
  await fetch(`${url(exact.proxyId)}&warm=1`, { method: "OPTIONS", headers: exact.headers });
  const statuses = await Promise.all(
    Array.from({ length: 200 }, () =>
      fetch(url(exact.proxyId), { headers: exact.headers }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      }),
    ),
  );
  const passed = statuses.filter((s) => s === 200).length;
  const refused = statuses.filter((s) => s === 429).length;

  const f = (n: number) => n.toFixed(2);
  const lines = [
    `\nMeters (2 limited request_count + 1 response_value) vs the same proxy without meters; store calls per warm request (mean of ${input.sample}):`,
    `  no meters:  before the answer ${f(plainCalls.before)}, after ${f(plainCalls.after)}  [${plainCalls.commands.join(", ")}]`,
    `  3 meters:   before the answer ${f(meteredCalls.before)}, after ${f(meteredCalls.after)}  [${meteredCalls.commands.join(", ")}]`,
    `  caller p50/p99 (1 connection, 200 requests): no meters ${plainLatency.p50}/${plainLatency.p99} ms, 3 meters ${meteredLatency.p50}/${meteredLatency.p99} ms (non-2xx ${plainLatency.non2xx + meteredLatency.non2xx})`,
    `  accuracy: 200 concurrent requests at a daily limit of 50: ${passed} passed, ${refused} refused (goal: exactly 50 passed)`,
  ];
  return { lines, metered: { url: url(metered.proxyId), headers: metered.headers } };
}
