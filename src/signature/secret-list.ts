/**
 * The one reading of "the endpoint's secret(s)" that every entry point shares (createPayhooks, the schemes,
 * PAYHOOKS_WEBHOOK_SECRET, `payhooks trigger`): a string holds one secret or several separated by commas
 * (a rotation), an array holds one secret per item. White space around each secret is dropped, and so are
 * empty entries; no secret the service issues contains a comma or surrounding white space.
 *
 * @example
 * parseSecretList('new-secret, old-secret') // ['new-secret', 'old-secret']
 * parseSecretList(['whsec_abc'])             // ['whsec_abc']
 */
export function parseSecretList(value: string | readonly string[]): string[] {
  const entries = typeof value === 'string' ? value.split(',') : value;
  return entries.map((secret) => secret.trim()).filter((secret) => secret !== '');
}
