import type { RecordedMigrations } from '../store/database-answers.js';
import type { MigrationFile } from '../store/migrate.js';
import { countOf } from './format.js';
import type { EnvOf, EnvVariable } from '../service/environment.js';

// The verdicts of `payhooks doctor` that need no network, database or file: each takes what was read and says
// ok, warn or fail, with what to do. The command (doctor-command.ts) does the reading.

/** How one check came out: `fail` makes doctor exit 1, `warn` does not. */
export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One line of doctor's report. */
export interface CheckResult {
  check: string;
  status: CheckStatus;
  /** What was found; never a secret's value. */
  summary: string;
  /** What to do about it (warn and fail only). */
  fix?: string | undefined;
}

/** The environment as `serve`'s resolution read it (checkServiceConfig), and its problems by the variable they name. */
export interface DoctorEnv {
  env: Partial<EnvOf<'serve'>>;
  /** The problem of each variable the table refuses, worded as every command words it. */
  problems: Partial<Record<EnvVariable, string>>;
}

/** The problems of some variables as one sentence, or undefined when they have none. */
export function problemsOf(problems: DoctorEnv['problems'], names: readonly EnvVariable[]): string | undefined {
  const found = names.map((name) => problems[name]).filter((problem) => problem !== undefined);
  return found.length ? found.join('; ') : undefined;
}

const ok = (check: string, summary: string): CheckResult => ({ check, status: 'ok', summary });
const warn = (check: string, summary: string, fix: string): CheckResult => ({ check, status: 'warn', summary, fix });
const fail = (check: string, summary: string, fix: string): CheckResult => ({ check, status: 'fail', summary, fix });

/**
 * An error's text with `secrets` blanked out: drivers and servers sometimes quote what they were given, and
 * doctor's output is meant to be pasted into tickets.
 */
export function scrubbed(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('***');
  return out;
}

/** An error's message for a report line: payhooks' prefix dropped, and the reason of a bare AggregateError. */
export function describeError(err: unknown): string {
  if (err instanceof AggregateError && !err.message) return describeError(err.errors[0]);
  if (err instanceof Error) {
    const text = err.message || (err as NodeJS.ErrnoException).code || err.name;
    return text.replace(/^payhooks: /, '');
  }
  return String(err);
}

const MIGRATE_FIX = 'run payhooks migrate (serve also applies them when it starts)';

/**
 * Compares the migrations a schema records with the files this version ships, as `migrate` would before
 * applying anything: recorded but unknown (a newer payhooks) and edited after applying stop every start; files
 * not yet recorded are applied by the next `migrate` or start.
 */
export function migrationsVerdict(
  check: string,
  schema: string,
  recorded: RecordedMigrations,
  files: readonly MigrationFile[],
): CheckResult {
  const shipped = new Set(files.map((file) => file.name));
  const byName = new Map(recorded.rows.map((row) => [row.name, row.checksum]));
  const unknown = recorded.rows.map((row) => row.name).filter((name) => !shipped.has(name));
  if (unknown.length) {
    return fail(
      check,
      `schema ${schema} was migrated by a newer payhooks: it records ${unknown.join(', ')}, which this version does not ship, so serve and migrate refuse it`,
      'upgrade payhooks, or point PAYHOOKS_SCHEMA at another schema',
    );
  }
  const edited = files.filter((file) => byName.has(file.name) && byName.get(file.name) !== file.checksum).map((file) => file.name);
  if (edited.length) {
    return fail(
      check,
      `schema ${schema} records ${edited.join(', ')} with another checksum: the file changed after it was applied, so serve and migrate refuse to start`,
      'reinstall payhooks (its migrations must never change); if you edited the file, restore it',
    );
  }
  const pending = files.filter((file) => !byName.has(file.name)).map((file) => file.name);
  if (pending.length === files.length && files.length > 0) {
    return warn(check, `schema ${schema} has none of the ${countOf(files.length, 'migration')} applied yet`, MIGRATE_FIX);
  }
  if (pending.length) {
    return warn(check, `schema ${schema}: ${pending.length} of ${files.length} pending (${pending.join(', ')})`, MIGRATE_FIX);
  }
  const latest = files.at(-1)?.name;
  return ok(check, `schema ${schema}: all ${files.length} applied${latest ? ` (latest ${latest})` : ''}`);
}

/** The migrations line when the database does not exist yet: everything is pending, by construction. */
export function notCreatedMigrations(check: string, files: readonly MigrationFile[]): CheckResult {
  return warn(check, `none applied yet: the database does not exist, so all ${files.length} are pending`, MIGRATE_FIX);
}

const SECRET_CHECK = 'webhook-secret';
const KEY_SHAPE = /^sk_(test|live)_\S+$/;

/**
 * The verdict on secrets serve accepts (docs/signatures.md): a list that would verify but looks like a mistake is a
 * warning.
 */
export function secretVerdict(secrets: readonly string[]): CheckResult {
  // What serve refuses (an empty list for a receiving role, a secret the scheme refuses) is resolveServiceConfig's.
  if (secrets.length === 0) return ok(SECRET_CHECK, 'PAYHOOKS_WEBHOOK_SECRET holds no secret (serve --role worker needs none)');
  const count = secrets.length === 1 ? 'one secret' : `${secrets.length} secrets (a rotation: each delivery may match any)`;
  if (new Set(secrets).size < secrets.length) {
    return warn(SECRET_CHECK, `${count}, one of them twice`, 'list each secret once: the new one first, then the old one');
  }
  // A pasted API key verifies nothing: deliveries are signed with the endpoint's own secret.
  if (secrets.some((secret) => KEY_SHAPE.test(secret) || secret.startsWith('pk_'))) {
    return warn(
      SECRET_CHECK,
      `${count}, but one looks like an API key (sk_…/pk_…), not a webhook signing secret`,
      "use the endpoint's signing secret (GET /v1/webhooks/{id}/secret); the key belongs in PAYHOOKS_API_KEY",
    );
  }
  return ok(SECRET_CHECK, `${count} in PAYHOOKS_WEBHOOK_SECRET`);
}

const KEY_CHECK = 'api-key';

/** The key as it may be shown: its environment's prefix only. */
export function keyLabel(key: string): string {
  const match = /^sk_(test|live)_/.exec(key);
  return match ? `${match[0]}…` : 'the key';
}

/**
 * The verdict on an API key's form: `sk_test_…` (staging) or `sk_live_…` (production), as the service issues
 * them. Unset is a warning, as serve's own at start: everything runs, without current-state reads.
 */
export function apiKeyVerdict(key: string | undefined, from: string): CheckResult {
  if (key === undefined) {
    return warn(
      KEY_CHECK,
      "PAYHOOKS_API_KEY is not set: handlers get no ctx.api and the mirror takes the events' own snapshots; backfill and reconcile refuse to run",
      "set PAYHOOKS_API_KEY (the organization's sk_live_… or sk_test_… key) and PAYHOOKS_API_URL for current-state reads",
    );
  }
  const match = KEY_SHAPE.exec(key);
  if (match) return ok(KEY_CHECK, `${keyLabel(key)} (${match[1] === 'live' ? 'production' : 'staging'}) from ${from}`);
  const publishable = key.startsWith('pk_') ? ', and starts with pk_: a publishable key cannot call the API' : '';
  // The client (and so serve) refuses only what is not an sk_ key at all; that is a problem of the resolution.
  return warn(
    KEY_CHECK,
    `the key from ${from} is not of the form sk_test_… or sk_live_… (it has ${countOf(key.length, 'character')}${/\s/.test(key) ? ', some of them white space' : ''}${publishable})`,
    "set PAYHOOKS_API_KEY to the organization's secret key: sk_live_… for production, sk_test_… for staging",
  );
}

/** The console line for a token serve accepts (a weak one is refused by resolveServiceConfig). */
export function consoleVerdict(token: string | undefined): CheckResult {
  if (token === undefined) return ok('console', 'off: PAYHOOKS_ADMIN_TOKEN is not set, so /admin answers 404');
  return ok('console', `on: /admin asks for PAYHOOKS_ADMIN_TOKEN (${countOf(token.length, 'character')})`);
}

const MARKS: Record<CheckStatus, string> = { ok: 'ok', warn: 'warn', fail: 'FAIL' };

/** The report as text: one line per check, its mark first, then a count. */
export function formatReport(results: readonly CheckResult[]): string {
  const width = Math.max(...results.map((result) => result.check.length));
  const lines = results.map(
    (result) =>
      `${MARKS[result.status].padEnd(4)}  ${result.check.padEnd(width)}  ${result.summary}${result.fix ? ` → ${result.fix}` : ''}`,
  );
  const count = (status: CheckStatus) => results.filter((result) => result.status === status).length;
  const failures = count('fail');
  lines.push(
    '',
    failures
      ? `${countOf(failures, 'problem')} to fix (FAIL), ${countOf(count('warn'), 'warning')}`
      : `no problems, ${countOf(count('warn'), 'warning')}`,
  );
  return lines.join('\n');
}
