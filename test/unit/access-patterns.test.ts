/**
 * docs/access-patterns.md against the code, so neither can drift from the other:
 * - "Served by" against the entity modules (lib/db/entities/*.ts): every `<module>.<function>`
 *   named is a repository function of that module, and every repository function is named;
 * - "Key builder" against lib/db/keys.ts: every builder named exists, and every builder is named.
 * A repository function is what an entity module exports as an `async` function (the readers,
 * schemas and key builders it also exports are synchronous).
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { billingKeys } from "#lib/db/entities/billing.ts";
import { passkeyKeys } from "#lib/db/entities/passkey.ts";
import * as keyModule from "#lib/db/keys.ts";

const DOC = fileURLToPath(new URL("../../docs/access-patterns.md", import.meta.url));
const ENTITIES = fileURLToPath(new URL("../../lib/db/entities/", import.meta.url));
const NONE = "— (none yet)";

/**
 * `keys.<name>` for each member of `keys`, the name of every other exported function, and the key
 * builders kept in their entity module (off the data plane's cold start: `passkeyKeys.<name>`).
 */
const BUILDERS = [
  ...Object.keys(keyModule.keys).map((name) => `keys.${name}`),
  ...Object.keys(passkeyKeys).map((name) => `passkeyKeys.${name}`),
  ...Object.keys(billingKeys).map((name) => `billingKeys.${name}`),
  ...Object.entries(keyModule)
    .filter(([name, value]) => name !== "keys" && typeof value === "function")
    .map(([name]) => name),
].sort();

const isAsyncFunction = (value: unknown) =>
  typeof value === "function" && value.constructor.name === "AsyncFunction";

/** `<module>.<function>` of every repository function of lib/db/entities/*.ts. */
async function repositoryFunctions(): Promise<string[]> {
  const modules = readdirSync(ENTITIES).filter((file) => file.endsWith(".ts"));
  const names: string[] = [];
  for (const file of modules) {
    const exported: Record<string, unknown> = await import(`${ENTITIES}${file}`);
    for (const [name, value] of Object.entries(exported))
      if (isAsyncFunction(value)) names.push(`${file.replace(/\.ts$/, "")}.${name}`);
  }
  return names.sort();
}

interface Row {
  line: number;
  pattern: string;
  servedBy: string;
  builders: string;
  status: string;
}

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((cell) => cell.trim());

/** The rows of every table of the doc whose header has the "Served by" and "Key builder" columns. */
function accessPatternRows(markdown: string): Row[] {
  const lines = markdown.split("\n");
  const rows: Row[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const header = cellsOf(lines[i] ?? "");
    if (!(lines[i] ?? "").trim().startsWith("|") || !header.includes("Key builder")) continue;
    expect(header, `docs/access-patterns.md line ${i + 1}`).toContain("Served by");
    const at = (column: string) => header.indexOf(column);
    for (i += 2; i < lines.length && (lines[i] ?? "").trim().startsWith("|"); i += 1) {
      const cells = cellsOf(lines[i] ?? "");
      // A `|` inside a cell would shift the columns: every row has the header's width.
      expect(cells.length, `docs/access-patterns.md line ${i + 1}`).toBe(header.length);
      rows.push({
        line: i + 1,
        pattern: cells[0] ?? "",
        servedBy: cells[at("Served by")] ?? "",
        builders: cells[at("Key builder")] ?? "",
        status: cells[at("Status")] ?? "",
      });
    }
  }
  return rows;
}

const namedIn = (cell: string) => [...cell.matchAll(/`([\w.-]+)`/g)].map((match) => match[1] as string);

describe("docs/access-patterns.md", () => {
  const rows = accessPatternRows(readFileSync(DOC, "utf8"));
  let repository: string[] = [];

  beforeAll(async () => {
    repository = await repositoryFunctions();
  });

  it("has the access-pattern tables, and the entity modules have repository functions", () => {
    expect(rows.length).toBeGreaterThan(20);
    expect(repository.length).toBeGreaterThan(20);
    expect(repository).toContain("member.findMember");
  });

  it("names, in every row, the repository functions that serve it (or says where else, after a dash)", () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const named = namedIn(row.servedBy);
      if (named.length === 0) {
        if (!/^— \S/.test(row.servedBy)) wrong.push(`line ${row.line} (${row.pattern}): names no server`);
        else if (row.servedBy === NONE && row.status !== "planned")
          wrong.push(`line ${row.line} (${row.pattern}): "none yet" but ${row.status}`);
        continue;
      }
      for (const name of named)
        if (!repository.includes(name))
          wrong.push(
            `line ${row.line} (${row.pattern}): ${name} is not a repository function of lib/db/entities`,
          );
    }
    expect(wrong).toEqual([]);
  });

  it("names every repository function of lib/db/entities in some row", () => {
    const shown = new Set(rows.flatMap((row) => namedIn(row.servedBy)));
    expect(repository.filter((name) => !shown.has(name))).toEqual([]);
  });

  it("names an existing key builder in every row (or none yet, for a planned pattern)", () => {
    const wrong: string[] = [];
    for (const row of rows) {
      const named = namedIn(row.builders);
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
    const shown = new Set(rows.flatMap((row) => namedIn(row.builders)));
    expect(BUILDERS.filter((builder) => !shown.has(builder))).toEqual([]);
  });
});
