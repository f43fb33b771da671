/**
 * The layering rule of docs/architecture.md, read from the import graph of functions/ and lib/:
 * functions → {api, mcp, oauth, http} → data-plane → {domain, streams} → vault → db → leaves.
 * A runtime import may point to its own layer or a lower one; type-only imports do not count.
 */
import { describe, expect, it } from "vitest";
import { LAYERS, layerOf, runtimeImports, unlayeredFiles, upwardImports } from "../support/import-graph.ts";

describe("layers", () => {
  it("no runtime import points up a layer", () => {
    const upward = upwardImports().map(
      (edge) =>
        `${edge.from} (${LAYERS[layerOf(edge.from) ?? 0]?.name}) imports ${edge.names.join(", ")} from ${edge.to} (${LAYERS[layerOf(edge.to) ?? 0]?.name})`,
    );
    expect(upward).toEqual([]);
  });

  it("every file of functions/ and lib/ is in a layer", () => {
    expect(unlayeredFiles()).toEqual([]);
  });

  it("reads static, re-exported and dynamic imports, and leaves type-only ones out", () => {
    const edges = runtimeImports();
    // A dynamic import the data plane uses to load the cascade on demand.
    expect(edges).toContainEqual(
      expect.objectContaining({
        from: "lib/data-plane/stages/claim.ts",
        to: "lib/domain/cascade.ts",
        names: ["import()"],
      }),
    );
    // A re-export.
    expect(
      edges.some(
        (edge) => edge.from === "lib/data-plane/pipeline.ts" && edge.to === "lib/net/path-segments.ts",
      ),
    ).toBe(true);
    // lib/domain/proxies.ts imports only types from lib/http/resource-schemas.ts.
    expect(
      edges.some(
        (edge) => edge.from === "lib/domain/proxies.ts" && edge.to === "lib/http/resource-schemas.ts",
      ),
    ).toBe(false);
  });
});
