import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

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

/** The logger payhooks uses when none is given: JSON lines on stdout, with redaction. */
export function createLogger(options: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const settings = { level: process.env.PAYHOOKS_LOG_LEVEL ?? 'info', redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, ...options };
  return destination ? pino(settings, destination) : pino(settings);
}
