/**
 * The one reading of "the endpoint's secret(s)" that every entry point shares (createPayhooks, the schemes,
 * PAYHOOKS_WEBHOOK_SECRET, `payhooks trigger`): a string holds one secret or several separated by commas
 * (a rotation), an array holds one secret per item. White space around each secret is dropped, and so are
 * empty entries; no secret the service issues contains a comma or surrounding white space.
 *
 * The list may come back empty: each caller says in its own words what is missing. A value that is neither a
 * string nor an array of strings is a programming mistake and throws a TypeError naming the bad item.
 *
 * @example
 * parseSecretList('new-secret, old-secret') // ['new-secret', 'old-secret']
 * parseSecretList(['whsec_abc'])             // ['whsec_abc']
 * parseSecretList(' , ')                     // []
 */
export function parseSecretList(value: string | readonly string[]): string[] {
  const entries: readonly unknown[] = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : notAList(value);
  return entries
    .map((secret, index) => {
      if (typeof secret !== 'string') {
        throw new TypeError(`Webhook secret #${index + 1} of ${entries.length} is ${kindOf(secret)}, not a string.`);
      }
      return secret.trim();
    })
    .filter((secret) => secret !== '');
}

function notAList(value: unknown): never {
  throw new TypeError(`The webhook secrets must be a string (several separated by commas) or an array of strings, not ${kindOf(value)}.`);
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}
