/**
 * Summarise a V8 CPU profile (`.cpuprofile`: the inspector's Profiler, or `node --cpu-prof`) of the bundled data plane by where the code comes
 * from: each sampled function's position in the minified bundle is mapped back through the
 * bundle's source map (decoded here: the mappings' base64 VLQ) to its source file, and the source
 * file to a package (`@smithy/core`) or a folder of this repository (`lib/data-plane`). Self time
 * only (the time a function itself was on the CPU), idle excluded. Unit test:
 * test/unit/bench-helpers.test.ts.
 */
import { readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (bench/ is one level below it). */
const PROJECT_ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    children?: number[];
  }[];
  samples: number[];
  timeDeltas: number[];
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const DIGIT = new Map([...BASE64].map((char, i) => [char, i]));

/** One segment's numbers from base64 VLQ (`AAAA` → [0, 0, 0, 0]). */
export function decodeVlq(segment: string): number[] {
  const values: number[] = [];
  let value = 0;
  let shift = 0;
  for (const char of segment) {
    const digit = DIGIT.get(char);
    if (digit === undefined) throw new Error(`Not base64 VLQ: ${segment}`);
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) shift += 5;
    else {
      values.push(value & 1 ? -Math.floor(value / 2) : Math.floor(value / 2));
      value = 0;
      shift = 0;
    }
  }
  return values;
}

/** Per generated line, the segments [generated column, source index, source line], sorted by column. */
export function decodeMappings(mappings: string): [number, number, number][][] {
  const lines: [number, number, number][][] = [];
  // Source index and line are kept (the column and name, relative too, are not needed here).
  let source = 0;
  let sourceLine = 0;
  for (const line of mappings.split(";")) {
    const segments: [number, number, number][] = [];
    let column = 0;
    for (const segment of line.split(",")) {
      if (!segment) continue;
      const v = decodeVlq(segment);
      column += v[0]!;
      if (v.length >= 4) {
        source += v[1]!;
        sourceLine += v[2]!;
        segments.push([column, source, sourceLine]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

export interface SourceMap {
  /** Source paths relative to the project root (`lib/...`, `node_modules/...`). */
  sources: string[];
  lines: [number, number, number][][];
}

/** The source file and line (1-based) of a generated position (0-based line and column), or undefined. */
export function sourceAt(
  map: SourceMap,
  line: number,
  column: number,
): { source: string; line: number } | undefined {
  const segments = map.lines[line];
  if (!segments?.length) return undefined;
  let found: [number, number, number] | undefined;
  for (const segment of segments) {
    if (segment[0] > column) break;
    found = segment;
  }
  const [, source, sourceLine] = found ?? segments[0]!;
  const path = map.sources[source];
  return path === undefined ? undefined : { source: path, line: sourceLine + 1 };
}

/** A source path's package (`node_modules/@smithy/core/...` → `@smithy/core`) or repository folder (`lib/data-plane`). */
export function groupOfSource(source: string): string {
  const match = source.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (match) return match[1]!;
  const parts = source.split("/");
  return parts.length > 2 ? parts.slice(0, 2).join("/") : parts[0]!;
}

/**
 * Where in the SDK a source file sits: `@smithy/core` by submodule and folder
 * (`@smithy/core endpoints/middleware-endpoint`), other SDK packages by name; undefined outside the SDK.
 */
export function sdkAreaOf(source: string): string | undefined {
  const core = source.match(/node_modules\/@smithy\/core\/dist-es\/submodules\/([^/]+)\/([^/]+)(\/)?/);
  if (core) return `@smithy/core ${core[1]}${core[3] ? `/${core[2]}` : ""}`;
  const other = source.match(/node_modules\/(@(?:smithy|aws-sdk|aws)\/[^/]+)/);
  return other?.[1];
}

/** `node_modules/@smithy/core/dist-es/submodules/x.js` → `@smithy/core/dist-es/submodules/x.js`. */
const shortSource = (source: string) => source.replace(/^.*node_modules\//, "");

/** The coarse part a group belongs to (the rows of docs/performance.md). */
export function partOf(group: string): string {
  if (group.startsWith("@smithy/")) return "AWS SDK: @smithy/*";
  if (group.startsWith("@aws-sdk/") || group.startsWith("@aws/")) return "AWS SDK: @aws-sdk/*";
  if (group === "zod") return "zod";
  if (group === "lib/data-plane") return "lib/data-plane";
  if (group.startsWith("lib/")) return "lib/ other (vault, db, domain, aws...)";
  if (group === "node internals") return "node internals (http, streams, net, timers)";
  if (group === "(garbage collector)") return "GC";
  if (group === "(program)" || group === "V8 builtins / native") return "V8 and native (program, builtins)";
  if (group === "the front (bench)") return "the front (bench)";
  return "other packages";
}

/** The inclusive part of any SDK frame (@smithy/* or @aws-sdk/*) on the stack. */
export const SDK_ANY = "AWS SDK (any package)";

export interface ProfileSummary {
  /** Busy time (idle excluded), µs. */
  busyUs: number;
  /** By group (package or folder), µs, biggest first. */
  groups: [string, number][];
  /** By part (partOf), µs, biggest first. */
  parts: [string, number][];
  /**
   * Inclusive time by part: the samples with a frame of that part anywhere on the stack (the
   * node:http, crypto and GC work a part's code calls synchronously counts for it too), µs.
   */
  inclusiveParts: [string, number][];
  /** Self time in the SDK by area (sdkAreaOf), µs, biggest first. */
  sdkAreas: [string, number][];
  /** Self time of the heaviest functions: [source file:line function, µs]. */
  functions: [string, number][];
}

/**
 * Self time by group. `frontFile` is the child program's URL (its own part); bundle files are
 * read with their `.map` beside them.
 */
export function summariseProfile(
  profile: CpuProfile,
  frontFile: string,
  readMap: (url: string) => SourceMap | undefined = (url) => readSourceMap(url),
): ProfileSummary {
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0));
  }
  const maps = new Map<string, SourceMap | undefined>();
  const groups = new Map<string, number>();
  const functions = new Map<string, number>();
  const sdkAreas = new Map<string, number>();
  let busyUs = 0;
  const partOfNode = new Map<number, string>();
  for (const node of profile.nodes) {
    const time = self.get(node.id) ?? 0;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (functionName === "(idle)" || functionName === "(root)") continue;
    let group: string;
    let where = "";
    if (!url)
      group =
        functionName.startsWith("(") && functionName !== "(anonymous)"
          ? functionName
          : "V8 builtins / native";
    else if (url.startsWith("node:")) group = "node internals";
    else if (url === frontFile) group = "the front (bench)";
    else {
      if (!maps.has(url)) maps.set(url, readMap(url));
      const map = maps.get(url);
      const at = map ? sourceAt(map, lineNumber, columnNumber) : undefined;
      group = at ? groupOfSource(at.source) : "other packages";
      const area = at && time > 0 ? sdkAreaOf(at.source) : undefined;
      if (area) sdkAreas.set(area, (sdkAreas.get(area) ?? 0) + time);
      where = at ? `${shortSource(at.source)}:${at.line}` : url;
    }
    partOfNode.set(node.id, partOf(group));
    if (time <= 0) continue;
    busyUs += time;
    groups.set(group, (groups.get(group) ?? 0) + time);
    const label = `${where || group} ${functionName || "(anonymous)"}`;
    functions.set(label, (functions.get(label) ?? 0) + time);
  }
  const parts = new Map<string, number>();
  for (const [group, time] of groups) parts.set(partOf(group), (parts.get(partOf(group)) ?? 0) + time);
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map<string, number>();
  for (const [id, time] of self) {
    if (!partOfNode.has(id)) continue; // idle, root
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const part = partOfNode.get(at);
      if (part) onStack.add(part);
      if (part?.startsWith("AWS SDK")) onStack.add(SDK_ANY);
    }
    for (const part of onStack) inclusive.set(part, (inclusive.get(part) ?? 0) + time);
  }
  const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]);
  return {
    busyUs,
    groups: sorted(groups),
    parts: sorted(parts),
    inclusiveParts: sorted(inclusive),
    sdkAreas: sorted(sdkAreas),
    functions: sorted(functions).slice(0, 15),
  };
}

/**
 * The `.map` beside a bundle file (`file:///.../index.mjs`), decoded, its sources made relative to
 * `root` (the project root); undefined when absent.
 */
export function readSourceMap(url: string, root = PROJECT_ROOT): SourceMap | undefined {
  if (!url.startsWith("file://")) return undefined;
  const file = fileURLToPath(url);
  try {
    const raw = JSON.parse(readFileSync(`${file}.map`, "utf8")) as { sources: string[]; mappings: string };
    return {
      sources: raw.sources.map((source) => relative(root, resolve(dirname(file), source))),
      lines: decodeMappings(raw.mappings),
    };
  } catch {
    return undefined;
  }
}
