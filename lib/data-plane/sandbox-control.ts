/**
 * The words of the Int32Array over the SharedArrayBuffer that the transform sandbox's main thread
 * (sandbox.ts) and its worker (sandbox-worker.ts) share; sandbox.ts ("Handoff") has the protocol.
 */
/** The last request's seq (the main thread writes it, then notifies). */
export const REQUEST_SEQ = 0;
/** The last answer's seq (the worker writes it, then notifies). */
export const ANSWER_SEQ = 1;
/** A call's transform key (a call is posted as its arguments' JSON alone). */
export const CALL_KEY = 2;
/** A call's deadline, ms. */
export const CALL_DEADLINE = 3;
/** The buffer's size in bytes. */
export const CONTROL_BYTES = 4 * Int32Array.BYTES_PER_ELEMENT;
