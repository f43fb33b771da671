/**
 * The API's own documentation, derived from the registry: the OpenAPI 3.1 document and a reference
 * page that renders it. Both are public and read nothing stored. The page is Redoc's standalone
 * bundle served inline by this function with the document inline too, so it loads nothing from
 * anywhere else (its Content-Security-Policy forbids it): it works offline and behind a firewall.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { API_TITLE, type OpenApiDocument, openApiDocument } from "#lib/api/openapi.ts";
import { access, type Operation, operation } from "#lib/api/operation.ts";
import { getConfig } from "#lib/config.ts";
import { REFERENCE_PAGE_BUNDLE } from "#lib/infra/api-manifest.ts";

/** The registry's operations, loaded on first use (the registry itself lists these operations). */
async function registryOperations(): Promise<readonly Operation[]> {
  return (await import("#lib/api/registry.ts")).OPERATIONS;
}

let documentCache: OpenApiDocument | undefined;
/** The document of the registry; it cannot change while the function runs, so it is built once. */
export async function registryDocument(): Promise<OpenApiDocument> {
  documentCache ??= openApiDocument(await registryOperations(), { regions: getConfig().regions });
  return documentCache;
}

const REDOC_LOGO_URL = "https://cdn.redoc.ly/redoc/logo-mini.svg";
const EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

/**
 * Redoc's bundle: beside the deployed bundle (the CDK copies it there, FUNCTION_GROUPS.docs), or
 * from the installed package when running from source.
 */
function rendererSource(): string {
  const beside = fileURLToPath(new URL(`./${basename(REFERENCE_PAGE_BUNDLE)}`, import.meta.url));
  const path = existsSync(beside) ? beside : createRequire(import.meta.url).resolve(REFERENCE_PAGE_BUNDLE);
  return (
    readFileSync(path, "utf8")
      // The one outside resource Redoc asks for: its footer logo, from its CDN. An empty image
      // instead (the footer's text stays); the CSP would block the request anyway.
      .replaceAll(`"${REDOC_LOGO_URL}"`, JSON.stringify(EMPTY_IMAGE))
      // No source map is served.
      .replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n")
  );
}

/**
 * Script text made safe to inline in HTML: `<!--`, `<script` and `</script` (found only inside
 * strings and regular expressions of the minified bundle, or of the JSON) would change how the
 * HTML parser finds the end of the script; `\x3C` is the same `<` to JavaScript.
 */
const inlineScript = (source: string) => source.replace(/<(!--|\/?script)/gi, "\\x3C$1");

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

interface Page {
  html: string;
  contentSecurityPolicy: string;
}

let pageCache: Page | undefined;
export async function referencePage(): Promise<Page> {
  if (pageCache) return pageCache;
  const renderer = inlineScript(rendererSource());
  const document = await registryDocument();
  const start = inlineScript(
    `Redoc.init(${JSON.stringify(document)}, ${JSON.stringify({
      expandResponses: "200,201",
      hideDownloadButton: false,
      jsonSampleExpandLevel: 3,
      sortPropsAlphabetically: false,
    })}, document.getElementById("reference"));`,
  );
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${API_TITLE} reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document is at <a href="openapi.json">openapi.json</a>.</noscript>
<div id="reference"></div>
<script>${renderer}</script>
<script>${start}</script>
</body>
</html>
`;
  // Only these two scripts run; nothing is fetched from anywhere (Redoc's search worker is a blob).
  const contentSecurityPolicy = [
    "default-src 'none'",
    `script-src ${sha256(renderer)} ${sha256(start)}`,
    "worker-src blob:",
    "style-src 'unsafe-inline'",
    "img-src data:",
    "font-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  pageCache = { html, contentSecurityPolicy };
  return pageCache;
}

/** The document is an OpenAPI 3.1 object; its own schema is the OpenAPI specification's. */
const OpenApiDocumentSchema = z
  .object({ openapi: z.string(), info: z.record(z.string(), z.unknown()) })
  .catchall(z.unknown())
  .describe("An OpenAPI 3.1 document");

const CACHE = { "Cache-Control": "public, max-age=300" };

export const docsOperations = [
  operation({
    id: "getOpenApiDocument",
    method: "GET",
    path: "/openapi.json",
    group: "docs",
    summary: "Get the OpenAPI document",
    description:
      "Answers the OpenAPI 3.1 description of this API, generated from the same declarations that route and check every request: each operation with its parameters, body, answers, errors and the access it needs. No authentication.",
    access: access.public,
    effect: "read",
    response: { status: 200, schema: OpenApiDocumentSchema },
    handler: async () => ({ body: await registryDocument(), headers: CACHE }),
  }),
  operation({
    id: "getApiReference",
    method: "GET",
    path: "/docs",
    group: "docs",
    summary: "Open the API reference page",
    description:
      "Answers an HTML page that renders the OpenAPI document for a person: every operation, its parameters, bodies and answers. The page is self-contained (it loads nothing from elsewhere). No authentication.",
    access: access.public,
    effect: "read",
    response: {
      status: 200,
      schema: z.string().describe("An HTML page"),
      contentType: "text/html; charset=utf-8",
    },
    handler: async () => {
      const page = await referencePage();
      return {
        body: page.html,
        headers: { ...CACHE, "Content-Security-Policy": page.contentSecurityPolicy },
      };
    },
  }),
];
