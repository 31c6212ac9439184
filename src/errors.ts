const PREFIX = 'payhooks: ';

/**
 * The root of the errors payhooks throws on its own account (verification, storage, configuration of its
 * components, the API client). Each message starts with `payhooks: `, so a log line or a crash says where it
 * came from; `instanceof PayhooksError` tells them from errors of handlers and other libraries.
 *
 * @example
 * try {
 *   await hooks.start();
 * } catch (err) {
 *   if (err instanceof PayhooksError) console.error(err.message); // "payhooks: …"
 * }
 */
export class PayhooksError extends Error {
  /** The message of any thrown value without the `payhooks: ` prefix, for an error that wraps another. */
  static describe(cause: unknown): string {
    const message = cause instanceof Error ? cause.message : String(cause);
    return message.startsWith(PREFIX) ? message.slice(PREFIX.length) : message;
  }

  constructor(message: string, options?: ErrorOptions) {
    super(message.startsWith(PREFIX) ? message : `${PREFIX}${message}`, options);
    this.name = new.target.name;
  }
}
