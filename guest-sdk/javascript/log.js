// Logging into the host's log, tagged with the plugin's name; `console.*` goes there too
// (there is no terminal).

import * as raw from "wink:plugin/log@0.4.0";

function text(args) {
  return args
    .map((a) => {
      if (typeof a === "string") return a;
      if (a instanceof Error) return a.stack ? `${a}\n${a.stack}` : String(a);
      try {
        return JSON.stringify(a, (_, v) => (typeof v === "bigint" ? String(v) : v)) ?? String(a);
      } catch (_) {
        return String(a);
      }
    })
    .join(" ");
}

/** Writes records to the host's log. Arguments are joined by spaces; non-strings are written
 * as JSON. */
export const log = {
  trace: (...args) => raw.log("trace", text(args)),
  debug: (...args) => raw.log("debug", text(args)),
  info: (...args) => raw.log("info", text(args)),
  warn: (...args) => raw.log("warn", text(args)),
  error: (...args) => raw.log("error", text(args)),
};

globalThis.console = {
  trace: log.trace,
  debug: log.debug,
  log: log.info,
  info: log.info,
  warn: log.warn,
  error: log.error,
};
