import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { parseSecretList } from '../signature/index.js';
import { isAccountId } from '../store/accounts.js';
import { httpUrlField } from './config-fields.js';

/**
 * Where an account's secret or key is read from: an environment variable or a file (its content, trimmed). Never the
 * value itself: a configuration file is shared and committed, the credentials of many organizations are not.
 */
const credentialRef = z.union([
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name') }),
  z.strictObject({ file: z.string().min(1) }),
]);
export type CredentialRef = z.infer<typeof credentialRef>;

/** One account of the configuration file's `accounts` (docs/accounts.md#configuration). */
const accountEntry = z.strictObject({
  id: z
    .string()
    .refine(isAccountId, 'expected an account id: lower-case letters, digits, "-" and "_", starting with a letter or digit, at most 63'),
  /** Its endpoints' signing secrets: comma-separated for a rotation. */
  secrets: credentialRef,
  /** Its API key: `ctx.api` of its events' handlers, its reconcile and verify. */
  apiKey: credentialRef.optional(),
  /** The API's address for this account; default the service's (`PAYHOOKS_API_URL`). */
  apiUrl: httpUrlField.optional(),
  /** Its own API rate budget, shared by every process of the service; default the service's (1,000 a minute). */
  rateBudget: z
    .strictObject({
      requestsPerWindow: z.number().int().min(1).max(1_000_000),
      windowMs: z.number().int().min(100).max(3_600_000).optional(),
    })
    .optional(),
  /** Its weight in the worker's fair claim, 1 to 1000; default 1. */
  workerShare: z.number().int().min(1).max(1000).optional(),
});
export type AccountEntry = z.infer<typeof accountEntry>;

/** The file's `accounts`: at least one, each id once. */
export const accountsFileSchema = z
  .array(accountEntry)
  .min(1, 'give at least one account, or leave accounts out for the one default account')
  .superRefine((entries, ctx) => {
    const seen = new Set<string>();
    entries.forEach((entry, i) => {
      if (seen.has(entry.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `the account ${entry.id} is named twice` });
      seen.add(entry.id);
    });
  });

/** An account with its credentials read: what the service runs with. */
export interface ResolvedAccount {
  id: string;
  secrets: string[];
  apiKey?: string | undefined;
  apiUrl?: string | undefined;
  rateBudget?: { requestsPerWindow: number; windowMs?: number | undefined } | undefined;
  workerShare: number;
}

/**
 * Reads each account's secrets and key from where the file says (`{ env }`, `{ file }` relative to `cwd`). Every
 * credential that cannot be read is a problem naming the account and the variable or file, never a value.
 *
 * @example
 * const { accounts, problems } = resolveAccounts(sync.accounts, { env: process.env, cwd: process.cwd() });
 */
export function resolveAccounts(
  entries: readonly AccountEntry[],
  where: {
    env: Readonly<Record<string, string | undefined>>;
    cwd: string;
    /** A process that receives nothing (`--role worker`) needs no secrets: they are not read. Default true. */
    secrets?: boolean | undefined;
  },
): { accounts: ResolvedAccount[]; problems: string[] } {
  const problems: string[] = [];
  const read = (ref: CredentialRef, what: string): string | undefined => {
    if ('env' in ref) {
      const value = where.env[ref.env]?.trim();
      if (!value) problems.push(`${what}: the environment variable ${ref.env} is not set`);
      return value || undefined;
    }
    const path = resolve(where.cwd, ref.file);
    try {
      const value = readFileSync(path, 'utf8').trim();
      if (!value) problems.push(`${what}: the file ${path} is empty`);
      return value || undefined;
    } catch (err) {
      problems.push(`${what}: the file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      return undefined;
    }
  };
  const accounts = entries.map((entry): ResolvedAccount => {
    const secretText = where.secrets === false ? undefined : read(entry.secrets, `accounts ${entry.id} secrets`);
    const secrets = secretText === undefined ? [] : parseSecretList(secretText);
    if (secretText !== undefined && secrets.length === 0) problems.push(`accounts ${entry.id} secrets: holds only commas and spaces`);
    return {
      id: entry.id,
      secrets,
      apiKey: entry.apiKey && read(entry.apiKey, `accounts ${entry.id} apiKey`),
      apiUrl: entry.apiUrl,
      rateBudget: entry.rateBudget,
      workerShare: entry.workerShare ?? 1,
    };
  });
  return { accounts, problems };
}
