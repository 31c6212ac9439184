/**
 * A URL as logs and errors may show it: scheme, host and path, without credentials or query (either may hold a
 * secret). Spelt out rather than `origin`, which is "null" for schemes such as amqp:.
 *
 * @example
 * describeUrl('amqp://guest:guest@127.0.0.1:5672') // 'amqp://127.0.0.1:5672/'
 */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname || '/'}`;
  } catch {
    return '(an invalid URL)';
  }
}
