/**
 * The request rules of URLs and paths a client gives the gateway: a target's base URL and test
 * path, and a credential test's path. Declared once here (a leaf: the request schemas of the HTTP
 * edge and the domain's credential test both use them). Classic zod, so not for the data plane's
 * cold start (it never validates these).
 */
import { z } from "zod";

/** Absolute http(s) URL without user information (credentials belong in a credential). */
export const BaseUrl = z
  .string()
  .trim()
  .max(2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === "https:" || url.protocol === "http:") && !url.username && !url.password;
    } catch {
      return false;
    }
  }, "must be an absolute http(s) URL without user information");

/** A path relative to the base URL: no scheme, no host. */
export const RelativePath = z
  .string()
  .trim()
  .max(2048)
  .refine(
    (value) => !/^[a-z][a-z0-9+.-]*:/i.test(value) && !value.startsWith("//") && !/[\s\0]/.test(value),
    "must be a path relative to the base URL (for example /health)",
  );
