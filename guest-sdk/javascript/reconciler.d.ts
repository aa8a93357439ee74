// Types of wink-guest/reconciler (reconciler.js), for editors and TypeScript users.

import type { Key, KubeObject, Requeue } from "./wink.js";

export { Key } from "./wink.js";

export interface Reconciler {
  init?(config: any): void;
  /** Brings the primary object `key` names to the state it asks for. */
  reconcile(key: Key): void | Requeue;
  /** For a watched resource mapped by the plugin: the keys an event on `obj` concerns. */
  mapToKeys?(obj: KubeObject): Array<Key | { namespace?: string | null; name: string }>;
}

/** The component's `reconciler` export, as ComponentizeJS expects it. */
export interface ReconcilerExport {
  init(config: string): void;
  reconcile(key: unknown): unknown;
  mapToKeys(obj: unknown): unknown[];
}

export function defineReconciler(reconciler: Reconciler | (() => Reconciler) | (new () => Reconciler)): ReconcilerExport;

/** Reconciles `key` after `ms` milliseconds, or as soon as possible. */
export function enqueue(key: Key | { namespace?: string | null; name: string }, ms?: number): void;
