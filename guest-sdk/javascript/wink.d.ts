// Types of wink-guest (wink.js), for editors and TypeScript users.

export const WIT_VERSION: string;
export const SDK_VERSION: string;

/** A transient failure: the host calls again later, with backoff, with the newest state. */
export class Retry extends Error {}
/** A permanent failure for this event: the host records it and moves on. */
export class Fatal extends Error {}
/** A refused cache read. */
export class CacheError extends Error {
  reason: "not-permitted" | "unknown-index";
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
}

/** A Kubernetes object: metadata parsed by the host, and the whole object as JSON. */
export class KubeObject {
  apiVersion: string;
  kind: string;
  namespace: string | null;
  name: string;
  uid: string;
  resourceVersion: string;
  generation: number | null;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  deletionTimestamp: string | null;
  ownerReferences: OwnerReference[];
  json: string;
  readonly key: string;
  readonly body: any;
  label(key: string): string | undefined;
  annotation(key: string): string | undefined;
  owner(kind: string): OwnerReference | undefined;
}

type LogFn = (...args: unknown[]) => void;
export const log: { trace: LogFn; debug: LogFn; info: LogFn; warn: LogFn; error: LogFn };

export const cache: {
  NAMESPACE_INDEX: "namespace";
  OWNER_UID_INDEX: "owner-uid";
  get(apiVersion: string, kind: string, key: string): KubeObject | null;
  list(apiVersion: string, kind: string, namespace?: string | null): KubeObject[];
  byIndex(apiVersion: string, kind: string, index: string, value: string): KubeObject[];
};

/** A failed request to the cluster. */
export class RequestError extends Error {
  reason:
    | "not-permitted"
    | "forbidden"
    | "not-found"
    | "already-exists"
    | "conflict"
    | "invalid"
    | "bad-request"
    | "rate-limited"
    | "timed-out"
    | "unavailable";
  causes: { field: string; reason: string; message: string }[];
  readonly transient: boolean;
}

export type PatchType = "merge" | "json" | "strategic" | "apply";

export interface DeleteOptions {
  uid?: string;
  resourceVersion?: string;
  propagation?: "orphan" | "background" | "foreground";
  gracePeriodSeconds?: number;
}

export const cluster: {
  get(apiVersion: string, kind: string, namespace: string | null, name: string): KubeObject;
  create(obj: object | string): KubeObject;
  update(obj: object | string): KubeObject;
  updateStatus(obj: object | string): KubeObject;
  patch(
    apiVersion: string,
    kind: string,
    namespace: string | null,
    name: string,
    patch: object | string,
    type?: PatchType,
    options?: { force?: boolean },
  ): KubeObject;
  patchStatus(apiVersion: string, kind: string, namespace: string | null, name: string, patch: object | string, type?: PatchType): KubeObject;
  apply(obj: object, options?: { force?: boolean }): KubeObject;
  delete(apiVersion: string, kind: string, namespace: string | null, name: string, options?: DeleteOptions): KubeObject | null;
  recordEvent(regarding: KubeObject, type: "Normal" | "Warning", reason: string, action: string, note: string): void;
};

/** A handler's request to be called again for the object after `ms` milliseconds. */
export interface Requeue {}
export function requeueAfter(ms: number): Requeue;

export interface Plugin {
  init?(config: any): void;
  onAdd?(obj: KubeObject, initialList: boolean): void | Requeue;
  onUpdate?(old: KubeObject, obj: KubeObject): void | Requeue;
  onDelete?(obj: KubeObject, finalStateUnknown: boolean): void | Requeue;
}

/** The component's `handler` export, as componentize-qjs expects it. */
export interface HandlerExport {
  init(config: string): void;
  onAdd(obj: unknown, initialList: boolean): unknown;
  onUpdate(old: unknown, obj: unknown): unknown;
  onDelete(obj: unknown, finalStateUnknown: boolean): unknown;
}

export function definePlugin(plugin: Plugin | (() => Plugin)): HandlerExport;
