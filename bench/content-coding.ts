/**
 * The cost of compressed answers (docs/data-plane.md, "Compressed bodies"), measured in-process:
 * for a typical JSON answer of 32 KiB and a large one of 1 MiB, the bytes each coding puts on the
 * wire, the CPU to decode it (what the gateway pays per coded answer, in lib/net/content-coding.ts),
 * and beside it the CPU to encode the answer again for the caller with gzip (levels 1 and 6): the
 * alternative the gateway did not take. Medians of repeated runs. `tsx bench/content-coding.ts` runs
 * this section alone.
 */
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { decodeBody } from "#lib/net/content-coding.ts";
import { encodeBody } from "../test/support/content-codings.ts";

export interface CodingRow {
  body: string;
  coding: string;
  wireBytes: number;
  decodeMs: number;
}

function jsonOf(bytes: number): Buffer {
  const items: unknown[] = [];
  let size = 2;
  for (let i = 0; size < bytes; i++) {
    const item = {
      id: i,
      name: `item-${i}`,
      price: (i * 7.31) % 100,
      tags: ["a", "b", i % 3 ? "c" : "d"],
      ok: i % 2 === 0,
    };
    size += JSON.stringify(item).length + 1;
    items.push(item);
  }
  return Buffer.from(JSON.stringify(items));
}

function medianMs(run: () => unknown, times: number): number {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint();
    run();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

async function medianAsyncMs(run: () => Promise<unknown>, times: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const start = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

export async function codingRows(): Promise<{
  rows: CodingRow[];
  reencode: { body: string; level: string; ms: number; bytes: number }[];
}> {
  const rows: CodingRow[] = [];
  const reencode: { body: string; level: string; ms: number; bytes: number }[] = [];
  for (const [label, bytes, times] of [
    ["32 KiB JSON", 32 * 1024, 200],
    ["1 MiB JSON", 1024 * 1024, 20],
  ] as const) {
    const plain = jsonOf(bytes);
    rows.push({ body: label, coding: "identity", wireBytes: plain.length, decodeMs: 0 });
    for (const coding of ["gzip", "deflate", "br", "zstd"]) {
      const encoded =
        coding === "br"
          ? brotliCompressSync(plain, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } })
          : encodeBody(coding, plain);
      const decodeMs = await medianAsyncMs(() => decodeBody(encoded, coding, 6 * 1024 * 1024), times);
      rows.push({ body: label, coding, wireBytes: encoded.length, decodeMs });
    }
    for (const level of [1, 6]) {
      const ms = medianMs(() => gzipSync(plain, { level }), times);
      reencode.push({ body: label, level: `gzip-${level}`, ms, bytes: gzipSync(plain, { level }).length });
    }
  }
  return { rows, reencode };
}

export function printCodingRows(result: Awaited<ReturnType<typeof codingRows>>): void {
  console.log("\nCompressed answers (in-process medians; the gateway decodes, the caller gets identity):");
  console.log("  body          coding     wire bytes   decode ms");
  for (const row of result.rows)
    console.log(
      `  ${row.body.padEnd(13)} ${row.coding.padEnd(9)} ${String(row.wireBytes).padStart(11)}   ${row.decodeMs.toFixed(3).padStart(9)}`,
    );
  console.log("  re-encoding for the caller instead (not done): ");
  for (const row of result.reencode)
    console.log(
      `  ${row.body.padEnd(13)} ${row.level.padEnd(9)} ${String(row.bytes).padStart(11)}   ${row.ms.toFixed(3).padStart(9)} ms`,
    );
}

if (import.meta.url === `file://${process.argv[1]}`) printCodingRows(await codingRows());
