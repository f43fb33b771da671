/**
 * docs/access-patterns.md against lib/db/keys.ts: every key builder appears in the table's "Key
 * builder" column, and every builder the table names exists, so neither can drift from the other.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as keyModule from "#lib/db/keys.ts";

const DOC = fileURLToPath(new URL("../../docs/access-patterns.md", import.meta.url));
const NONE = "— (none yet)";

/** `keys.<name>` for each member of `keys`, and the name of every other exported function. */
const BUILDERS = [
  ...Object.keys(keyModule.keys).map((name) => `keys.${name}`),
  ...Object.entries(keyModule)
    .filter(([name, value]) => name !== "keys" && typeof value === "function")
    .map(([name]) => name),
].sort();

interface Row {
  line: number;
  pattern: string;
  builders: string;
  status: string;
}

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((cell) => cell.trim());

/** The rows of every table of the doc whose header has a "Key builder" column. */
function accessPatternRows(markdown: string): Row[] {
  const lines = markdown.split("\n");
  const rows: Row[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const header = cellsOf(lines[i] ?? "");
    if (!(lines[i] ?? "").trim().startsWith("|") || !header.includes("Key builder")) continue;
    const builderAt = header.indexOf("Key builder");
    const statusAt = header.indexOf("Status");
    for (i += 2; i < lines.length && (lines[i] ?? "").trim().startsWith("|"); i += 1) {
      const cells = cellsOf(lines[i] ?? "");
      // A `|` inside a cell would shift the columns: every row has the header's width.
      expect(cells.length, `docs/access-patterns.md line ${i + 1}`).toBe(header.length);
      rows.push({
        line: i + 1,
        pattern: cells[0] ?? "",
        builders: cells[builderAt] ?? "",
        status: cells[statusAt] ?? "",
      });
    }
  }
  return rows;
}

const namedBuilders = (cell: string) => [...cell.matchAll(/`([\w.]+)`/g)].map((match) => match[1] as string);

describe("docs/access-patterns.md and lib/db/keys.ts", () => {
  const rows = accessPatternRows(readFileSync(DOC, "utf8"));

  it("has the access-pattern tables", () => {
    expect(rows.length).toBeGreaterThan(20);
  });

  it("names an existing key builder in every row (or none yet, for a planned pattern)", () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const named = namedBuilders(row.builders);
      if (named.length === 0) {
        if (row.builders !== NONE || row.status !== "planned")
          wrong.push(`line ${row.line} (${row.pattern}): names no builder`);
        continue;
      }
      for (const name of named)
        if (!BUILDERS.includes(name))
          wrong.push(`line ${row.line} (${row.pattern}): ${name} is not in lib/db/keys.ts`);
    }
    expect(wrong).toEqual([]);
  });

  it("shows every key builder of lib/db/keys.ts in some row", () => {
    const shown = new Set(rows.flatMap((row) => namedBuilders(row.builders)));
    expect(BUILDERS.filter((builder) => !shown.has(builder))).toEqual([]);
  });
});
