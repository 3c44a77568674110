// Validates a Kubernetes object against the official OpenAPI schemas that kubernetes-models
// ships (generated from the Kubernetes API's swagger). Returns "" when valid, else why not.
import { Pod, Secret, Namespace, ServiceAccount, Service, ConfigMap, ResourceQuota, LimitRange } from "kubernetes-models/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { Deployment } from "kubernetes-models/apps/v1";

const MODELS = {
  "v1/Pod": Pod,
  "v1/Secret": Secret,
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "v1/ResourceQuota": ResourceQuota,
  "v1/LimitRange": LimitRange,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "apps/v1/Deployment": Deployment,
};

export function schemaErrors(object, expectedKind) {
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
    return "";
  } catch (error) {
    return String(error.message || error);
  }
}
