import type { z } from 'zod';

/**
 * CEL rules (`x-kubernetes-validations`) attached to zod schemas as metadata, so the CRD generator
 * finds them where the field is declared. The apiserver evaluates them on create and update, which
 * lets `kubectl apply` refuse bad input before the operator sees it.
 */
export const VALIDATIONS_KEY = 'x-kubernetes-validations';

export type ValidationRule = {
  rule: string;
  message: string;
  /** Points the error at a field below the schema the rule sits on, e.g. `.domain`. */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
};

/** Adds rules to a schema, after any it already carries. */
export function withRules<T extends z.ZodType>(schema: T, ...rules: ValidationRule[]): T {
  const existing = (schema.meta()?.[VALIDATIONS_KEY] as ValidationRule[] | undefined) ?? [];
  return schema.meta({ [VALIDATIONS_KEY]: [...existing, ...rules] });
}

/** `a or b`, `a, b, c`: how messages list alternatives. */
function alternatives(fields: readonly string[]): string {
  return fields.length === 2 ? `${fields[0]} or ${fields[1]}` : fields.join(', ');
}

const present = (fields: readonly string[]) => fields.map((field) => `has(self.${field})`);

/** Exactly one of the (optional) fields is set. */
export function exactlyOne(...fields: string[]): ValidationRule {
  const rule =
    fields.length === 2
      ? `${present(fields).join(' != ')}`
      : `[${present(fields).join(', ')}].filter(set, set).size() == 1`;
  return { rule, message: `exactly one of ${alternatives(fields)} must be set` };
}

/** At most one of the (optional) fields is set: a reference by name or a raw server id, not both. */
export function atMostOne(...fields: string[]): ValidationRule {
  const rule =
    fields.length === 2
      ? `!(${present(fields).join(' && ')})`
      : `[${present(fields).join(', ')}].filter(set, set).size() <= 1`;
  const message =
    fields.length === 2
      ? `${fields[0]} and ${fields[1]} are mutually exclusive`
      : `at most one of ${fields.join(', ')} may be set`;
  return { rule, message };
}

/** `field` needs `other`: e.g. an OAuth clientId without its clientSecretRef is refused. */
export function requires(field: string, other: string): ValidationRule {
  return {
    rule: `!has(self.${field}) || has(self.${other})`,
    message: `${field} requires ${other}`,
    fieldPath: `.${other}`,
  };
}

/**
 * A field that cannot change once the object exists, neither set, changed nor removed. Placed on the
 * parent object (not the field) so that adding or removing an optional field is caught too: a rule on
 * the field itself only runs when the field is present in both the old and the new object.
 */
export function immutable(field: string, why?: string): ValidationRule {
  return {
    rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    message: `${field} is immutable${why ? `: ${why}` : ''}`,
    fieldPath: `.${field}`,
  };
}
