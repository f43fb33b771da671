/**
 * The parts of jose the data plane uses, loaded with import() on the first jwtVerify request
 * (jwks-cache.ts loadJose): a namespace import of "jose" itself would keep all of jose (about
 * 58 KiB minified) in that chunk, this module only what is named here.
 */
export { createLocalJWKSet, decodeProtectedHeader, errors, jwtVerify } from "jose";
