// What every controller does with metadata: controller owner references and label
// selectors, with the rules of apimachinery's metav1.GetControllerOf and
// LabelSelectorAsSelector and controller-runtime's SetControllerReference. It makes no host
// call (wink.js re-exports it), so its tests run in Node: `node --test tests/`.

/** Another object is the controller already (controller-runtime's AlreadyOwnedError). */
export class AlreadyOwned extends Error {
  constructor(message) {
    super(message);
    this.name = "AlreadyOwned";
  }
}

/** A LabelSelector the API server would refuse. */
export class InvalidSelector extends Error {
  constructor(message) {
    super(message);
    this.name = "InvalidSelector";
  }
}

/** The owner reference of `obj` with `controller: true`, or undefined. */
export function controllerOf(obj) {
  return (obj.ownerReferences ?? []).find((o) => o.controller);
}

/** Whether `owner` (an object) is the controller of `obj`, matched by uid. */
export function isControlledBy(obj, owner) {
  const controller = controllerOf(obj);
  return controller !== undefined && Boolean(owner.uid) && controller.uid === owner.uid;
}

/** The owner reference naming `owner` as controller (blockOwnerDeletion set). */
export function controllerReference(owner) {
  if (!owner.uid) throw new Error(`${owner.kind} ${owner.name} has no uid: it cannot own anything yet`);
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Makes `owner` the controller of `obj` (an object about to be written) and returns `obj`:
 * a reference to the same owner (by uid) is replaced, other owners kept; another controller
 * throws AlreadyOwned, a namespaced owner in another namespace an Error.
 */
export function setControllerReference(owner, obj) {
  const reference = controllerReference(owner);
  const meta = (obj.metadata ??= {});
  if (owner.namespace && meta.namespace && owner.namespace !== meta.namespace) {
    throw new Error(`${owner.kind} ${owner.namespace}/${owner.name} cannot own an object in namespace ${meta.namespace}`);
  }
  const refs = (meta.ownerReferences ?? []).filter((r) => r.uid !== reference.uid);
  const other = refs.find((r) => r.controller);
  if (other) throw new AlreadyOwned(`already controlled by ${other.kind} ${other.name}`);
  meta.ownerReferences = [...refs, reference];
  return obj;
}

const OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"];

/**
 * Whether `labels` (an object of strings) match `selector` (a LabelSelector: matchLabels,
 * matchExpressions with In, NotIn, Exists, DoesNotExist). `{}` matches everything, null or
 * undefined nothing; an invalid selector throws InvalidSelector.
 */
export function selectorMatches(selector, labels) {
  if (selector === null || selector === undefined) return false;
  const has = (key) => Object.hasOwn(labels, key);
  let matches = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => has(k) && labels[k] === v);
  for (const e of selector.matchExpressions ?? []) {
    const values = e.values ?? [];
    if (!e.key) throw new InvalidSelector("an expression has no key");
    if (!OPERATORS.includes(e.operator)) throw new InvalidSelector(`operator ${e.operator} is not one of ${OPERATORS.join(", ")}`);
    if ((e.operator === "In" || e.operator === "NotIn") && values.length === 0) {
      throw new InvalidSelector(`operator ${e.operator} on ${e.key} needs values`);
    }
    if ((e.operator === "Exists" || e.operator === "DoesNotExist") && values.length > 0) {
      throw new InvalidSelector(`operator ${e.operator} on ${e.key} takes no values`);
    }
    const found = has(e.key);
    const holds = {
      In: () => found && values.includes(labels[e.key]),
      NotIn: () => !found || !values.includes(labels[e.key]),
      Exists: () => found,
      DoesNotExist: () => !found,
    }[e.operator]();
    matches = matches && holds;
  }
  return matches;
}
