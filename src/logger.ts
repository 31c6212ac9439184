import { pino, type DestinationStream, type LevelWithSilent, type Logger, type LoggerOptions } from 'pino';

/**
 * Paths pino blanks out wherever they appear: secrets, and the personal data a webhook or API response
 * carries. payhooks never logs bodies, but handlers log with the same logger, so the net is wide.
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

/** The logger payhooks uses when none is given: JSON lines on stdout, with redaction. */
export function createLogger(options: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const settings = {
    // An empty variable counts as unset, as the CLI's environment reader has it.
    level: process.env.PAYHOOKS_LOG_LEVEL || LOGGER_DEFAULTS.level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...options,
  };
  return destination ? pino(settings, destination) : pino(settings);
}
