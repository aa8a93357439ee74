// Types of wink-guest (wink.js), for editors and TypeScript users.

export const WIT_VERSION: string;

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

export interface Plugin {
  init?(config: any): void;
  onAdd?(obj: KubeObject, initialList: boolean): void;
  onUpdate?(old: KubeObject, obj: KubeObject): void;
  onDelete?(obj: KubeObject, finalStateUnknown: boolean): void;
}

/** The component's `handler` export, as componentize-qjs expects it. */
export interface HandlerExport {
  init(config: string): void;
  onAdd(obj: unknown, initialList: boolean): void;
  onUpdate(old: unknown, obj: unknown): void;
  onDelete(obj: unknown, finalStateUnknown: boolean): void;
}

export function definePlugin(plugin: Plugin | (() => Plugin)): HandlerExport;
