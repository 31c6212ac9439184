import type { z } from 'zod';
import type { FieldIssue } from './errors.js';

/** Turns zod issues into dotted paths and messages (never the values: inputs may hold personal data). */
export function zodIssues(error: z.ZodError, prefix = ''): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter((part) => part !== '').join('.'),
    message: issue.message,
  }));
}
