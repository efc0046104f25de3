export const GROUP = 'test.edgeward.dev';
export const VERSION = 'v1';
export const PLURAL = 'widgets';

/** A CRD with the features the operator's CRDs rely on: structural schema, CEL, status subresource. */
export const WIDGET_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ${PLURAL}.${GROUP}
spec:
  group: ${GROUP}
  scope: Namespaced
  names: { plural: ${PLURAL}, singular: widget, kind: Widget, shortNames: [wdg], categories: [edgeward-test] }
  versions:
    - name: ${VERSION}
      served: true
      storage: true
      subresources: { status: {} }
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              x-kubernetes-validations:
                - rule: "!has(self.minSize) || self.minSize <= self.size"
                  message: minSize must not exceed size
              properties:
                size: { type: integer, minimum: 1, maximum: 10 }
                minSize: { type: integer, minimum: 1 }
                colour: { type: string, enum: [red, blue] }
            status:
              type: object
              properties:
                id: { type: string }
                observedGeneration: { type: integer, format: int64 }
`;

export type Widget = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; generation?: number };
  spec: { size: number; minSize?: number; colour?: string };
  status?: { id?: string; observedGeneration?: number };
};

export function widgetIn(namespace: string, name: string, spec: Widget['spec']): Widget {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'Widget', metadata: { name, namespace }, spec };
}
