import type { z } from 'zod';

/** An additional printer column (`kubectl get` output) of a CRD version. */
export type PrinterColumn = {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  /** 0 shows in `kubectl get`; 1 only with `-o wide`. */
  priority?: number;
};

/** Everything the generator needs to know about one custom resource kind. */
export type KindDefinition<Spec extends z.ZodType = z.ZodType, Status extends z.ZodType = z.ZodType> = {
  kind: string;
  /** Lowercase plural, the resource name in URLs and the CRD name (`<plural>.edgeward.dev`). */
  plural: string;
  shortNames: string[];
  /** What the resource is, for `kubectl explain`. */
  description: string;
  spec: Spec;
  status: Status;
  /** Columns shown between REASON and AGE. */
  printerColumns?: PrinterColumn[];
  /**
   * The spec must be given although none of its fields is required on its own: its rules ask for
   * one of two forms, so the `{}` a spec left out would default to is refused (and the apiserver
   * refuses a CRD whose default its own rules refuse).
   */
  specRequired?: true;
};

/** Keeps the literal spec and status types, for controllers that import the kind. */
export function defineKind<Spec extends z.ZodType, Status extends z.ZodType>(
  definition: KindDefinition<Spec, Status>,
): KindDefinition<Spec, Status> {
  return definition;
}
