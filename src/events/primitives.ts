import { z } from 'zod';

// The catalog is lenient where the spec is loose and strict where a wrong value would do harm:
// unknown fields are kept (looseObject), `T?` fields take null or absence (nullish), and amounts,
// currencies and dates must be what they say.

/** A non-empty identifier. */
export const id = z.string().min(1, 'must be a non-empty id');

/** An amount in the currency's minor unit. */
export const amount = z.number().finite();

/**
 * An ISO 4217 code. Upper case only, as ISO writes it: a lower-case code is more likely a bug upstream than
 * a style, and money must not be booked against a guessed currency.
 */
export const currency = z.string().regex(/^[A-Z]{3}$/, 'must be a three-letter ISO 4217 code in upper case');

/** An ISO 8601 date-time, kept as the text received (offsets and fractions allowed). */
export const dateTime = z.iso.datetime({ offset: true, local: false });

/** A whole number. */
export const integer = z.number().int();

/** A `{key, value}` metadata pair. */
export const metadataPairSchema = z.looseObject({ key: z.string(), value: z.string() });

/** `metadata` (pairs) and `meta` (the same flattened); either may be missing in practice, so both are optional. */
export const metadataFields = {
  metadata: z.array(metadataPairSchema).nullish(),
  meta: z.record(z.string(), z.string()).nullish(),
};

/**
 * The declared shape of a loose zod object, without the `[key: string]: unknown` index signature that
 * `looseObject` adds: unknown fields are kept at run time, but typing them as allowed everywhere would let
 * `event.data.refund` compile on an invoice event. Records (`meta`) keep their index signatures.
 */
export type Known<T> = T extends readonly (infer Item)[]
  ? Known<Item>[]
  : T extends object
    ? { [K in keyof T as string extends K ? (unknown extends T[K] ? never : K) : K]: Known<T[K]> }
    : T;

/** The typed output of a catalog schema (see {@link Known}). */
export type Infer<Schema extends z.ZodType> = Known<z.output<Schema>>;
