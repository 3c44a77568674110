// Validates a Kubernetes object against the official OpenAPI schemas that kubernetes-models
// ships (generated from the Kubernetes API's swagger), and cert-manager's objects against the
// schemas of its CRDs (@kubernetes-models/cert-manager, generated from cert-manager's own CRD
// manifests). Returns "" when valid, else why not.
// With {strict: true} a field the schema does not declare is an error too (unknownFields).
import { Pod, Secret, Namespace, ServiceAccount, Service, ConfigMap, ResourceQuota, LimitRange,
         PersistentVolumeClaim } from "kubernetes-models/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { Deployment } from "kubernetes-models/apps/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { Certificate, Issuer } from "@kubernetes-models/cert-manager/cert-manager.io/v1";

const MODELS = {
  "v1/Pod": Pod,
  "v1/Secret": Secret,
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "v1/ResourceQuota": ResourceQuota,
  "v1/LimitRange": LimitRange,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "apps/v1/Deployment": Deployment,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "cert-manager.io/v1/Certificate": Certificate,
  "cert-manager.io/v1/Issuer": Issuer,
};

// The paths of the fields in `object` that its schema does not declare. The published schemas
// leave objects open (no additionalProperties: false), like the API server's own, which drops
// an unknown field or, under strict field validation (kubectl apply's default), refuses it:
// a misspelt field (`minAvaliable`, `readinesProbe`) would pass the type check and then be
// ignored by the cluster. The compiled validator reads each property its schema declares (and
// every entry of a map), so what it never read is unknown: it runs here over proxies that
// record each read.
function unknownFields(Model, object) {
  const read = new WeakMap();  // each object or array in `object` -> the keys read from it
  const watch = (value) => {
    if (value === null || typeof value !== "object") return value;
    if (!read.has(value)) read.set(value, new Set());
    const keys = read.get(value);
    return new Proxy(value, {
      get(target, key, receiver) { keys.add(key); return watch(Reflect.get(target, key, receiver)); },
      has(target, key) { keys.add(key); return Reflect.has(target, key); },
    });
  };
  Model.prototype.validate.call(watch(object));
  const unknown = [];
  const walk = (value, path) => {
    if (value === null || typeof value !== "object") return;
    const keys = read.get(value) ?? new Set();
    for (const [key, child] of Object.entries(value)) {
      if (keys.has(key)) walk(child, `${path}/${key}`);
      else unknown.push(`${path}/${key}`);
    }
  };
  walk(object, "");
  return unknown;
}

export function schemaErrors(object, expectedKind, { strict = false } = {}) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) {
    return "the body is not a JSON object";
  }
  const key = `${object.apiVersion}/${object.kind}`;
  if (expectedKind && object.kind !== expectedKind) {
    return `kind ${object.kind} where ${expectedKind} was expected`;
  }
  const Model = MODELS[key];
  if (!Model) return `no schema for ${key}`;
  try {
    new Model(object).validate();
    if (!strict) return "";
    const unknown = unknownFields(Model, object);
    return unknown.length ? `fields the schema does not declare: ${unknown.join(", ")}` : "";
  } catch (error) {
    return String(error.message || error);
  }
}
