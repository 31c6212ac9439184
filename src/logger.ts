import { type ChildLoggerOptions, type DestinationStream, type LevelWithSilent, type Logger, type LoggerOptions, pino } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { scrubForLog, scrubText } from './internal/scrub.js';
import { activeTraceIds } from './internal/tracing.js';

type ChildOptions = ChildLoggerOptions<never>;

/**
 * Paths pino blanks out wherever they appear: secrets, and the personal data a webhook or API response
 * carries. payhooks never logs bodies, but handlers log with the same logger, so the net is wide. Beyond
 * these paths every logged object is scrubbed at any depth (see {@link createLogger}).
 */
export const REDACTED_PATHS = [
  'secret',
  'secrets',
  'apiKey',
  'password',
  'authorization',
  '*.secret',
  '*.secrets',
  '*.apiKey',
  '*.authorization',
  'headers.authorization',
  'headers["x-webhook-signature"]',
  'headers["webhook-signature"]',
  '*.email',
  '*.phoneNumber',
  '*.cardholder',
  'data',
  'rawBody',
  'body',
];

/** The defaults of {@link createLogger} (the level is also the default of `PAYHOOKS_LOG_LEVEL`). */
export const LOGGER_DEFAULTS = { level: 'info' } as const satisfies { level: LevelWithSilent };

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/**
 * The logger payhooks uses when none is given: JSON lines on stdout, or readable lines when stdout is a terminal.
 * Every argument of every call is scrubbed
 * before pino sees it: emails, phone numbers, API keys and secrets are masked at any depth (by key name, and
 * by shape inside strings, error messages included), long text is capped at 8 KB, and an error keeps only
 * its type, message, code and stack (a database error's `detail`, which echoes the row's values, is dropped).
 * A line written while an OpenTelemetry span is active carries its `trace_id` and `span_id`.
 *
 * @example
 * const logger = createLogger({ level: 'debug' });
 */
export function createLogger(options: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const settings: LoggerOptions = {
    // An empty variable counts as unset, as the CLI's environment reader has it.
    level: process.env.PAYHOOKS_LOG_LEVEL || LOGGER_DEFAULTS.level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Lines written inside a span carry its ids, so that logs and traces join (docs/tracing.md#logs).
    mixin: traceIdsOfLine,
    mixinMergeStrategy: mergeTraceIds,
    ...options,
    // Errors arrive already reduced by the scrub; pino's own err serializer would rename their type.
    serializers: { err: (value: unknown) => value, ...options.serializers },
    hooks: {
      logMethod(args, method) {
        method.apply(this, scrubArguments(args) as Parameters<typeof method>);
      },
    },
  };
  return pino(settings, destination ?? (process.stdout.isTTY ? prettyTerminal() : undefined));
}

const NO_IDS = Object.freeze({});

/** The active span's `trace_id` and `span_id` for a log line; nothing outside a span, or without an SDK. */
function traceIdsOfLine(): object {
  return activeTraceIds() ?? NO_IDS;
}

/** pino's own merge, which writes into the mixin's object, except for the shared empty one: no object made per line. */
function mergeTraceIds(line: object, ids: object): object {
  return ids === NO_IDS ? line : Object.assign(ids, line);
}

/**
 * Lines a person reads on a terminal (pino-pretty): time, level, message, then the fields. Written synchronously, as
 * pino writes JSON, so nothing is lost at exit. Redirected or piped, output stays JSON lines for log collectors.
 */
function prettyTerminal(): DestinationStream {
  return PinoPretty({ sync: true, colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}

/**
 * A child of any pino logger (one an app passed in included) whose calls are scrubbed like
 * {@link createLogger}'s, for what payhooks hands to handlers as `ctx.logger`: a handler that logs the
 * event, or `{ email }`, must not put personal data into the app's logs.
 *
 * @example
 * const log = scrubbingChild(appLogger, { eventId });
 * log.info({ customer: event.data.customer }, 'paid'); // email and phone masked
 */
export function scrubbingChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  return scrubbing(parent.child(scrubForLog(bindings) as Record<string, unknown>));
}

/**
 * `logger` (one an app passed in) with every log call and child scrubbed like {@link createLogger}'s: what payhooks
 * itself logs through an app's logger (an error carrying the statement's parameters, say) puts no personal data there.
 *
 * @example
 * const log = scrubbingLogger(appLogger);
 * log.warn({ err }, 'could not record the outcome'); // the error keeps its type, message, code and stack only
 */
export function scrubbingLogger(logger: Logger): Logger {
  return scrubbing(logger);
}

/**
 * {@link scrubbingChild}, made only when it is first needed: a log call at a level the parent writes, or anything
 * else asked of it. The worker makes one per event and one per handler run, and most of them never write a line
 * (a handler that succeeds logs at info, which production loggers leave out): making them all cost the drain more
 * than its database work (the bindings scrubbed, pino's child serialised, its redaction compiled). A call at a level
 * the parent leaves out is a no-op that makes nothing; `child` of it is as lazy.
 *
 * @example
 * const log = lazyScrubbingChild(appLogger, { eventId }); // nothing made yet
 * log.debug('claimed'); // at level info: still nothing made
 */
export function lazyScrubbingChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let made: Logger | undefined;
  const make = () => {
    made ??= scrubbingChild(parent, bindings);
    return made;
  };
  const noop = () => undefined;
  return new Proxy(parent, {
    get(_target, property) {
      if (made === undefined) {
        if (typeof property === 'string' && (LEVELS as readonly string[]).includes(property) && !parent.isLevelEnabled(property))
          return noop;
        if (property === 'child')
          return (more: Record<string, unknown>, options?: ChildOptions) =>
            options === undefined ? lazyScrubbingChild(parent, { ...bindings, ...more }) : make().child(more, options);
      }
      const logger = make();
      const value: unknown = Reflect.get(logger, property, logger);
      return typeof value === 'function' ? value.bind(logger) : value;
    },
    // Setting (the level, say) is the child's, as on one made at once: never the parent's.
    set(_target, property, value) {
      const logger = make();
      return Reflect.set(logger, property, value, logger);
    },
  });
}

/** A view of `logger` whose log calls and children scrub their arguments; everything else passes through. */
function scrubbing(logger: Logger): Logger {
  return new Proxy(logger, {
    get(target, property) {
      if (typeof property === 'string' && (LEVELS as readonly string[]).includes(property)) {
        const log = target[property as (typeof LEVELS)[number]] as (...args: unknown[]) => void;
        return (...args: unknown[]) => log.apply(target, scrubArguments(args));
      }
      if (property === 'child') {
        return (more: Record<string, unknown>, options?: ChildOptions) =>
          scrubbing(target.child(scrubForLog(more) as Record<string, unknown>, options));
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A log call's arguments, scrubbed; `log.error(err)` keeps pino's shape `{ err }` with the message as `msg`. */
function scrubArguments(args: unknown[]): unknown[] {
  const [first, ...rest] = args;
  if (first instanceof Error)
    return [{ err: scrubForLog(first) }, ...(rest.length ? rest.map((arg) => scrubForLog(arg)) : [scrubText(first.message)])];
  return args.map((arg) => scrubForLog(arg));
}
