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

/** `path: message; path: message`, with `(root)` for an issue of the value as a whole. */
export function describeIssues(issues: readonly FieldIssue[]): string {
  return issues.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ');
}
