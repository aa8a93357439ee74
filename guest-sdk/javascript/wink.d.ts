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

/** A lent object was read after its handler call returned. */
export class ExpiredObject extends Error {}

/** A Kubernetes object: metadata parsed by the host, and the whole object as JSON. A
 * handler's objects are lent for the call and read on demand (each part once); those from
 * `cache` and `cluster` are whole. */
export class KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  /** null for cluster-scoped objects. */
  readonly namespace: string | null;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly generation: number | null;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly deletionTimestamp: string | null;
  readonly ownerReferences: OwnerReference[];
  /** The object as JSON text, exactly as served. */
  readonly json: string;
  /** `namespace/name`, or `name`. */
  readonly key: string;
  /** The whole object, parsed from `json` once. */
  readonly body: any;
  label(key: string): string | undefined;
  annotation(key: string): string | undefined;
  owner(kind: string): OwnerReference | undefined;
  /** This object read whole, valid after the handler returns. */
  snapshot(): KubeObject;
  /** The whole object (`JSON.stringify(obj)`). */
  toJSON(): any;
}

/** The key of a reconciler's primary object. */
export class Key {
  constructor(namespace: string | null | undefined, name: string);
  static of(obj: { namespace?: string | null; name: string }): Key;
  readonly namespace: string | null;
  readonly name: string;
  /** `namespace/name`, or `name`: the cache key. */
  readonly key: string;
}

type LogFn = (...args: unknown[]) => void;
export const log: { trace: LogFn; debug: LogFn; info: LogFn; warn: LogFn; error: LogFn };

export const cache: {
  NAMESPACE_INDEX: "namespace";
  OWNER_UID_INDEX: "owner-uid";
  get(apiVersion: string, kind: string, key: string | Key): KubeObject | null;
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

/** The component's `handler` export, as ComponentizeJS expects it. */
export interface HandlerExport {
  init(config: string): void;
  onAdd(obj: unknown, initialList: boolean): unknown;
  onUpdate(old: unknown, obj: unknown): unknown;
  onDelete(obj: unknown, finalStateUnknown: boolean): unknown;
}

export function definePlugin(plugin: Plugin | (() => Plugin) | (new () => Plugin)): HandlerExport;

/** Another object is the controller already. */
export class AlreadyOwned extends Error {}
/** A LabelSelector the API server would refuse. */
export class InvalidSelector extends Error {}

interface Owned {
  ownerReferences?: OwnerReference[];
}
interface Owner {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  namespace?: string | null;
}
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist"; values?: string[] }[];
}

/** The owner reference of `obj` with `controller: true`, or undefined. */
export function controllerOf(obj: Owned): OwnerReference | undefined;
/** Whether `owner` is the controller of `obj`, matched by uid. */
export function isControlledBy(obj: Owned, owner: Owner): boolean;
/** The owner reference naming `owner` as controller (blockOwnerDeletion set). */
export function controllerReference(owner: Owner): OwnerReference & { blockOwnerDeletion: true };
/** Adds `owner` as the controller of `obj` (a plain object with metadata); returns `obj`. */
export function setControllerReference<T extends { metadata?: any }>(owner: Owner, obj: T): T;
/** Whether `labels` match `selector` (null or undefined matches nothing; `{}` everything). */
export function selectorMatches(selector: LabelSelector | null | undefined, labels: Record<string, string>): boolean;
