import type { z } from 'zod';

/** One failing field: its dotted path (`data.invoice.currency`; empty for the value as a whole) and what is wrong. */
export interface FieldIssue {
  path: string;
  message: string;
}

/**
 * zod's issues as dotted paths under `prefix`, with their messages. Never the values: inputs and payloads may
 * hold personal data, and these end up in logs and error messages.
 *
 * @example
 * issuesOf(error, 'input'); // [{ path: 'input.phoneNumber', message: 'must be an E.164 phone number…' }]
 */
export function issuesOf(error: z.ZodError, prefix = ''): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter((part) => part !== '').join('.'),
    message: issue.message,
  }));
}

/** How many issues {@link describeIssues} spells out before summing up the rest. */
const SHOWN_ISSUES = 10;

/** `path: message; path: message` (at most ten, then `and N more`), with `(root)` for the value as a whole. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  const shown = issues.slice(0, SHOWN_ISSUES).map((issue) => `${issue.path || '(root)'}: ${issue.message}`);
  if (issues.length > SHOWN_ISSUES) shown.push(`and ${issues.length - SHOWN_ISSUES} more`);
  return shown.join('; ');
}
