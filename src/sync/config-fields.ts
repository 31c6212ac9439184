import { z } from 'zod';
import { EVENT_TYPES, type EventType, isEventType } from '../events/event-types.js';
import { type DurationRange, durationRangeProblem, parseDuration } from '../internal/duration.js';
import { isAccountId } from '../store/accounts.js';
import { urlCredentialsProblem } from './http-helper.js';

// The fields the configuration file's sections share (docs/configuration.md): each sink's own file builds its
// schema from these, so that a name, a secret, a duration or a list of event types is checked the same way everywhere.

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * The range of each duration of the file, checked when it is read (docs/configuration.md#durations): a duration
 * is a timer's delay or a span of history, and one out of range either misbehaves (Node fires a timer past
 * 24.8 days after 1 ms) or makes no sense (`0s` between two reconciliations).
 */
export const DURATION_RANGES = {
  /** Each run lists the delivery history: more often than a minute only spends the shared API budget. */
  'reconcile.every': { minMs: MINUTE, maxMs: 24 * DAY },
  'reconcile.lookback': { minMs: MINUTE, maxMs: 90 * DAY },
  /** The upper bound is FORWARD_LIMITS.timeoutMs.maxMs: a worker slot is held meanwhile. */
  'forward.timeout': { minMs: 1000, maxMs: 600_000 },
  'brokers.duplicateWindow': { minMs: 1000, maxMs: 7 * DAY },
  /** A publish holds a worker slot while it waits for its acknowledgement. */
  'brokers.ackTimeout': { minMs: 1000, maxMs: 60_000 },
  /** Below a second the pings are traffic of their own; above a minute a dead connection goes unseen for minutes. */
  'brokers.pingInterval': { minMs: 1000, maxMs: 60_000 },
} as const satisfies Record<string, DurationRange>;

const DURATION = /^(\d+\s*[dhms]\s*)+$/;

/** A sink's `accounts`: the account ids whose events it takes, at least one, repeats dropped. Left out: every account. */
export const accountsField = z
  .array(
    z
      .string()
      .refine(isAccountId, 'expected an account id: 1 to 63 lower-case letters, digits, "_" or "-", starting with a letter or digit'),
  )
  .min(1, 'list at least one account, or leave the key out for every account')
  .transform((ids) => [...new Set(ids)]);

/** A list of event types of the catalog, at least one. */
export const eventTypesField = z
  .array(
    z.string().refine(isEventType, {
      error: (issue) => `${JSON.stringify(issue.input)} is not an event type (expected one of ${EVENT_TYPES.join(', ')})`,
    }),
  )
  .min(1, 'list at least one event type, or leave the key out for all of them')
  .transform((types) => types as EventType[]);

/** A duration of the file (`10s`, `1h 30m`), in the range {@link DURATION_RANGES} gives its key; kept as text. */
export const durationText = (example: string, key: keyof typeof DURATION_RANGES) =>
  z
    .string()
    .regex(DURATION, `expected a duration such as ${example} (a number with d, h, m or s)`)
    .superRefine((text, ctx) => {
      if (!DURATION.test(text)) return;
      const range = DURATION_RANGES[key];
      const problem = durationRangeProblem(parseDuration(text), range);
      if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} is out of range: ${key} ${problem}` });
    });

/** A duration of the file, as milliseconds. */
export const durationMs = (example: string, key: keyof typeof DURATION_RANGES) =>
  durationText(example, key).transform((text) => parseDuration(text));

/**
 * A secret or credential: written out, or `{ env: 'NAME' }` to read it from the environment when the file is
 * loaded (an unset variable is reported with the key, never a value).
 */
export const secretField = z
  .union([z.string().min(1, 'must not be empty'), z.strictObject({ env: z.string().min(1) })])
  .transform((value, ctx) => {
    if (typeof value === 'string') return value;
    const found = process.env[value.env];
    if (found) return found;
    ctx.addIssue({ code: 'custom', message: `the environment variable ${value.env} is not set` });
    return z.NEVER;
  });

/** A sink's name: completion is recorded under `<prefix>:<name>`, so it is kept short and plain. */
export const sinkNameField = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'expected 1 to 63 lower-case letters, digits, ".", "_" or "-", starting with a letter or digit');

/** An http:// or https:// URL without credentials. The URL itself is never repeated in a message: it may hold credentials. */
export const httpUrlField = z
  .string()
  .refine((value) => {
    try {
      return ['http:', 'https:'].includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'expected an http:// or https:// URL')
  .superRefine((value, ctx) => {
    const problem = urlCredentialsProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: `the URL ${problem}` });
  });
