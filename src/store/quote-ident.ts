/** Quotes an SQL identifier (schema, channel or savepoint name) for splicing into SQL text. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
