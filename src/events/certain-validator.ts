import type { z } from 'zod';

/** Says whether a value certainly passes a schema; false means "not certain", never "certainly not". */
export type CertainValidator = (value: unknown) => boolean;

/** What the validator reads of a zod schema's definition (zod v4's `_zod.def`). */
interface Def {
  type: string;
  checks?: readonly { _zod: { def: CheckDef } }[] | undefined;
  coerce?: boolean | undefined;
  format?: string | undefined;
  pattern?: RegExp | undefined;
  shape?: Record<string, z.ZodType> | undefined;
  catchall?: z.ZodType | undefined;
  innerType?: z.ZodType | undefined;
  element?: z.ZodType | undefined;
  keyType?: z.ZodType | undefined;
  valueType?: z.ZodType | undefined;
}

interface CheckDef {
  check: string;
  format?: string | undefined;
  minimum?: number | undefined;
  pattern?: RegExp | undefined;
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

const ALWAYS: CertainValidator = () => true;

/**
 * A validator that tells, without building anything, whether a value made by `JSON.parse` certainly passes `schema`:
 * what the worker needs to know before it runs handlers (an event whose data fails its schema is `invalid`), without
 * the copy of every object and the per-field bookkeeping a zod parse makes (for a 2 KB event about 10 KB of garbage,
 * the largest share of a no-op event's cost). Undefined when the schema uses anything but the catalog's kinds
 * (loose objects, strings with a minimum length, a pattern or the ISO date-time format, finite numbers and safe
 * integers, booleans, arrays, string records, optional and nullable): such a schema is left to zod.
 *
 * It errs only one way: true only when zod would accept the value; false also where it is unsure (then ask zod,
 * whose answer and messages stand). A test holds it to zod on the catalog, its edge cases and generated mutations.
 *
 * @example
 * const valid = certainValidator(EVENT_DATA_SCHEMAS.INVOICE_PAID);
 * if (valid?.(json.data)) runHandlers(); else explain(EVENT_DATA_SCHEMAS.INVOICE_PAID.safeParse(json.data));
 */
export function certainValidator(schema: z.ZodType): CertainValidator | undefined {
  return compile(schema, new Map());
}

function compile(schema: z.ZodType, made: Map<z.ZodType, CertainValidator | undefined>): CertainValidator | undefined {
  if (made.has(schema)) return made.get(schema);
  const validator = compileNew(defOf(schema), made);
  made.set(schema, validator);
  return validator;
}

function compileNew(def: Def, made: Map<z.ZodType, CertainValidator | undefined>): CertainValidator | undefined {
  if (def.coerce) return undefined;
  const hasChecks = (def.checks?.length ?? 0) > 0;
  switch (def.type) {
    case 'unknown':
      return hasChecks ? undefined : ALWAYS;
    case 'boolean':
      return hasChecks ? undefined : (value) => typeof value === 'boolean';
    case 'number':
      return numberValidator(def);
    case 'string':
      return stringValidator(def);
    case 'optional':
    case 'nullable': {
      const inner = def.innerType && !hasChecks ? compile(def.innerType, made) : undefined;
      if (!inner) return undefined;
      return def.type === 'optional' ? (value) => value === undefined || inner(value) : (value) => value === null || inner(value);
    }
    case 'array': {
      const element = def.element && !hasChecks ? compile(def.element, made) : undefined;
      if (!element) return undefined;
      return (value) => {
        if (!Array.isArray(value)) return false;
        for (const item of value) if (!element(item)) return false;
        return true;
      };
    }
    case 'record': {
      // Keys: any string (a key schema with checks, or of another kind, is left to zod). JSON objects are plain.
      if (hasChecks || !def.keyType || !def.valueType) return undefined;
      const key = defOf(def.keyType);
      if (key.type !== 'string' || key.coerce || key.format !== undefined || (key.checks?.length ?? 0) > 0) return undefined;
      const item = compile(def.valueType, made);
      if (!item) return undefined;
      return (value) => {
        if (!isJsonObject(value)) return false;
        for (const k in value) if (!item((value as Record<string, unknown>)[k])) return false;
        return true;
      };
    }
    case 'object':
      return objectValidator(def, made);
    default:
      return undefined;
  }
}

/** An object as JSON.parse makes one: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A loose object (unknown keys kept, not checked): each declared key by its schema. */
function objectValidator(def: Def, made: Map<z.ZodType, CertainValidator | undefined>): CertainValidator | undefined {
  if ((def.checks?.length ?? 0) > 0 || !def.shape || !def.catchall || defOf(def.catchall).type !== 'unknown') return undefined;
  const keys = Object.keys(def.shape);
  const validators: CertainValidator[] = [];
  for (const key of keys) {
    const validator = compile(def.shape[key]!, made);
    if (!validator) return undefined;
    validators.push(validator);
  }
  return (value) => {
    if (!isJsonObject(value)) return false;
    for (let i = 0; i < keys.length; i++) if (!validators[i]!(value[keys[i]!])) return false;
    return true;
  };
}

/** A finite number, or a safe integer (zod's `int()`). */
function numberValidator(def: Def): CertainValidator | undefined {
  let integer = false;
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    if (c.check === 'number_format' && c.format === 'safeint') integer = true;
    else return undefined;
  }
  return integer ? (value) => Number.isSafeInteger(value) : (value) => typeof value === 'number' && Number.isFinite(value);
}

/** A string, with a minimum length, a pattern, or the ISO date-time format. */
function stringValidator(def: Def): CertainValidator | undefined {
  const patterns: RegExp[] = [];
  let minimum = 0;
  if (def.format !== undefined) {
    if (def.format !== 'datetime' || !isPlainPattern(def.pattern)) return undefined;
    patterns.push(def.pattern);
  }
  for (const check of def.checks ?? []) {
    const c = check._zod.def;
    if (c.check === 'min_length' && typeof c.minimum === 'number') minimum = Math.max(minimum, c.minimum);
    else if (c.check === 'string_format' && c.format === 'regex' && isPlainPattern(c.pattern)) patterns.push(c.pattern);
    else return undefined;
  }
  return (value) => {
    if (typeof value !== 'string') return false;
    // zod counts code points: a string of at least twice the minimum in UTF-16 units has enough whatever they are,
    // and a non-empty one has at least one. In between, ask zod.
    if (minimum > 0 && value.length < minimum * 2 && !(minimum === 1 && value.length >= 1)) return false;
    for (const pattern of patterns) if (!pattern.test(value)) return false;
    return true;
  };
}

/** A pattern whose `test` keeps no state between calls (no global or sticky flag). */
function isPlainPattern(pattern: RegExp | undefined): pattern is RegExp {
  return pattern instanceof RegExp && !pattern.global && !pattern.sticky;
}

/**
 * The revision of {@link certainValidator}'s rules: raise it with any change to what they accept, so that marks the
 * receiver made under the old rules (`dataCheckFingerprint`) are no longer trusted by workers with the new ones.
 */
export const CERTAIN_VALIDATOR_REVISION = 1;

/**
 * What {@link certainValidator} reads of a schema, as plain JSON: two schemas with the same outline get validators that
 * give the same answers. A fingerprint of it tells whether data found certainly valid by one build of payhooks is
 * still certainly valid to another (the receiver's mark on a stored body, which the worker trusts only when equal).
 *
 * @example
 * JSON.stringify(validatorOutline(z.string().min(1))) // '{"type":"string","checks":[{"check":"min_length","minimum":1}]}'
 */
export function validatorOutline(schema: z.ZodType): unknown {
  const def = defOf(schema);
  const outline = (inner: z.ZodType | undefined) => (inner ? validatorOutline(inner) : undefined);
  const pattern = (p: RegExp | undefined) => (p instanceof RegExp ? `/${p.source}/${p.flags}` : undefined);
  return {
    type: def.type,
    coerce: def.coerce,
    format: def.format,
    pattern: pattern(def.pattern),
    checks: def.checks?.map(({ _zod: { def: c } }) => ({
      check: c.check,
      format: c.format,
      minimum: c.minimum,
      pattern: pattern(c.pattern),
    })),
    shape: def.shape ? Object.fromEntries(Object.entries(def.shape).map(([key, value]) => [key, validatorOutline(value)])) : undefined,
    catchall: outline(def.catchall),
    innerType: outline(def.innerType),
    element: outline(def.element),
    keyType: outline(def.keyType),
    valueType: outline(def.valueType),
  };
}
