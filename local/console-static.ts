/**
 * Serves the built web console (console/dist) at the Core API's origin, for the paths the API does
 * not own: a file when one matches (hashed assets cached for a year, immutable), else index.html
 * (the SPA fallback, never cached). The API's own prefixes keep their JSON 404.
 */
import { existsSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, normalize, sep } from "node:path";

/** Paths the API owns: an unknown path under them is the API's 404, never the console. */
export const API_PREFIXES = [
  "/api",
  "/auth",
  "/mcp",
  "/.well-known",
  "/oauth",
  "/openapi.json",
  "/docs",
  "/webhooks",
];

export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "strict-origin-when-cross-origin",
  "X-Frame-Options": "DENY",
};

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

export const ownedByApi = (path: string) =>
  API_PREFIXES.some(
    (prefix) => path === prefix || path.startsWith(`${prefix}/`) || path.startsWith(`${prefix}?`),
  );

export type ConsoleServer = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;

/** A handler for console/dist, or undefined when the console is not built. Answers false when the path is not its. */
export function consoleStatic(dist: string): ConsoleServer | undefined {
  if (!existsSync(join(dist, "index.html"))) return undefined;
  const root = normalize(dist);
  return async (req, res, path) => {
    const method = (req.method ?? "GET").toUpperCase();
    if ((method !== "GET" && method !== "HEAD") || ownedByApi(path)) return false;
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      decoded = "/";
    }
    let file = normalize(join(root, decoded));
    let isFile = false;
    if (file.startsWith(root + sep) && !decoded.split("/").some((part) => part.startsWith("."))) {
      isFile = await stat(file).then(
        (s) => s.isFile(),
        () => false,
      );
    }
    if (!isFile) file = join(root, "index.html");
    const body = await readFile(file);
    const immutable = isFile && file.startsWith(join(root, "assets") + sep);
    res.writeHead(200, {
      ...CONSOLE_SECURITY_HEADERS,
      "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
      "Content-Length": body.length,
      "Cache-Control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    });
    res.end(method === "HEAD" ? undefined : body);
    return true;
  };
}
