// The errors a plugin throws (Retry, Fatal) and the ones the host's imports throw to it
// (CacheError, RequestError). No host call.

/** A transient failure: the host calls again later, with backoff, with the newest state. */
export class Retry extends Error {
  constructor(message) {
    super(message);
    this.name = "Retry";
  }
}

/** A permanent failure for this event (or key): the host records it and moves on. */
export class Fatal extends Error {
  constructor(message) {
    super(message);
    this.name = "Fatal";
  }
}

/** A refused cache read: `reason` is "not-permitted" or "unknown-index". */
export class CacheError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = "CacheError";
    this.reason = reason;
  }
}

/** A failed request to the cluster. `reason` is one of "not-permitted" (refused by wink, before
 * any request), "forbidden", "not-found", "already-exists", "conflict", "invalid",
 * "bad-request", "rate-limited", "timed-out", "unavailable"; `causes` lists the fields at
 * fault of an "invalid" one ({field, reason, message}). */
export class RequestError extends Error {
  constructor(reason, message, causes = []) {
    super(message);
    this.name = "RequestError";
    this.reason = reason;
    this.causes = causes;
  }

  /** Whether trying again later may succeed. */
  get transient() {
    return ["conflict", "rate-limited", "timed-out", "unavailable"].includes(this.reason);
  }
}

/** The `{tag, val}` variant an import threw (the error case of its `result`), or null. */
export function variantOf(e) {
  const payload = e && e.payload;
  return payload && typeof payload.tag === "string" ? payload : null;
}
