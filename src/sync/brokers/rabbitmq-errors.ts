/**
 * What the RabbitMQ sink was doing when the broker refused: the words complete "refused to …".
 */
export type RabbitMqStep = 'declare the exchange' | 'declare the queue' | 'bind the queue' | 'open a channel' | 'publish';

// amqplib words a refusal as `… 406 (PRECONDITION-FAILED) with message "PRECONDITION_FAILED - <the server's text>"`,
// for a rejected operation and for a channel the server closed alike.
const REFUSAL = /(\d{3}) \(([A-Z-]+)\) with message "(?:[A-Z_]+ - )?(.*)"\s*$/s;
const INEQUIVALENT = /inequivalent arg '([^']+)' for (exchange|queue) '([^']*)' in vhost '([^']*)': received (.+?) but current is (.+)$/s;
const ACCESS = /access to (exchange|queue) '([^']*)' in vhost '([^']*)' refused/;
const LOCKED = /locked queue '([^']*)' in vhost '([^']*)'/;
const MISSING = /no (exchange|queue) '([^']*)' in vhost '([^']*)'/;
// The user name is half of the URL's credentials: the messages say "the URL's user" instead.
const USER = /for user '[^']*'/g;

/** `the value 'quorum' of type 'longstr'` → `'quorum'`; `none` → `none`. */
function shortValue(value: string): string {
  return /^the value ('.*') of type '[^']*'$/s.exec(value)?.[1] ?? value;
}

/** The server's own refusal, as a sentence that says what is wrong and what to do about it. */
function advice(text: string): string {
  const inequivalent = INEQUIVALENT.exec(text);
  if (inequivalent) {
    const [, arg = '', kind = '', name = '', vhost = '', received = '', current = ''] = inequivalent;
    const other = kind === 'queue' ? 'another queue name, or queue: false to publish to the exchange alone' : 'another exchange name';
    return (
      `${kind} '${name}' exists in vhost '${vhost}' with ${arg} ${shortValue(current)}, and this sink declares it with ${arg} ` +
      `${shortValue(received)}: delete the ${kind} (payhooks declares it again at the next attempt), or configure ${other}`
    );
  }
  const access = ACCESS.exec(text);
  if (access) {
    const [, kind = '', name = '', vhost = ''] = access;
    return (
      `the URL's user lacks permission on ${kind} '${name}' in vhost '${vhost}' (declaring needs "configure", publishing "write", ` +
      `binding "write" on the queue and "read" on the exchange): grant it (rabbitmqctl set_permissions), or configure a name it may use`
    );
  }
  const locked = LOCKED.exec(text);
  if (locked) {
    return `queue '${locked[1]}' in vhost '${locked[2]}' is exclusive to another connection: configure another queue name`;
  }
  const missing = MISSING.exec(text);
  if (missing) {
    return `${missing[1]} '${missing[2]}' does not exist in vhost '${missing[3]}' (deleted while the sink ran?); the next attempt declares it again`;
  }
  return text.replace(USER, "for the URL's user");
}

/**
 * A RabbitMQ failure as an operator can act on it: which step the broker refused, why in plain words, and what to
 * change (`exchange 'payhooks.events' exists … with type 'fanout', and this sink declares it with type 'topic': delete
 * the exchange …`), with the server's code. Never includes the URL's credentials. Anything that is not a refusal by
 * the server (a socket error, a timeout) keeps its own message.
 *
 * @example
 * explainRabbitMqError(err, 'declare the exchange', 'amqp://127.0.0.1:5672/ exchange payhooks.events')
 */
export function explainRabbitMqError(err: unknown, step: RabbitMqStep, where: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const refusal = REFUSAL.exec(message);
  if (!refusal) return `RabbitMQ at ${where}: cannot ${step}: ${message.replace(USER, "for the URL's user")}`;
  const [, code = '', name = '', text = ''] = refusal;
  return `RabbitMQ at ${where} refused to ${step} (${code} ${name.replace(/-/g, '_')}): ${advice(text)}`;
}
