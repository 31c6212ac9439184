import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Command, Option } from 'commander';
import { CONFIG_FILE_NAMES } from '../sync/config.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';

/** The templates of `payhooks init`, in `--help` order, each a folder of `templates/init/`. */
export const INIT_TEMPLATES = {
  minimal: 'one handler for INVOICE_PAID and PAYMENT_COMPLETED that reads the invoice through ctx.api, to fill in',
  'direct-debit': 'registerDirectDebit (payhooks/handlers/direct-debit) with a dunning hook built on dunningDecision',
  'crm-sync': 'a connector (defineConnector) that PUTs each customer and invoice to CRM_URL with its idempotency key; the mirror on',
} as const;

/** The name of an init template. */
export type InitTemplate = keyof typeof INIT_TEMPLATES;

// Two levels up from both src/cli/ and dist/cli/: the package root, where templates/ is published.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEMPLATES_DIR = join(PACKAGE_ROOT, 'templates/init/');

/** Options of {@link initProject}. */
export interface InitOptions {
  /**
   * Where the project gets payhooks: a payhooks checkout (a folder) or a tarball of `npm pack`, written as a `file:`
   * dependency. Unset: this payhooks' own folder when it runs from a checkout (not from an installed package), else
   * the registry's `^version`.
   */
  from?: string | undefined;
}

/** The project's payhooks dependency: its package.json spec, what `npm install` is given, and a line saying why. */
interface PayhooksSource {
  spec: string;
  /** The argument of `npm install` in a project that has a package.json already. */
  installArg: string;
  note?: string | undefined;
}

/**
 * Where the new project gets payhooks. A registry range from a checkout sent users to a registry that does not have
 * payhooks; a `file:` dependency on the checkout (npm links it and runs its `prepare`, the build) or on a tarball
 * made by `npm pack` installs without it.
 */
function payhooksSource(from: string | undefined, version: string): PayhooksSource {
  if (from === undefined) {
    const root = realpathSync(PACKAGE_ROOT).replace(/[\\/]$/, '');
    // Installed packages live in a node_modules folder; anything else is a checkout (run in it, or npm link-ed).
    if (root.split(sep).includes('node_modules')) return { spec: `^${version}`, installArg: 'payhooks' };
    return {
      spec: `file:${root}`,
      installArg: shellQuote(root),
      note: `payhooks runs from the checkout at ${root}: the project depends on it (file:), since npm's registry may not have this version. --from PATH names another checkout or a tarball of npm pack.`,
    };
  }
  const path = resolve(from);
  if (!existsSync(path))
    throw new UsageError(`init changed nothing: --from ${path} does not exist. Give a payhooks checkout or a tarball made by npm pack.`);
  if (statSync(path).isDirectory()) {
    let name: unknown;
    try {
      name = JSON.parse(readFileSync(join(path, 'package.json'), 'utf8')).name;
    } catch {
      name = undefined;
    }
    if (name !== 'payhooks')
      throw new UsageError(`init changed nothing: --from ${path} is not a payhooks checkout (its package.json does not name payhooks).`);
  } else if (!/\.(tgz|tar\.gz)$/.test(path)) {
    throw new UsageError(
      `init changed nothing: --from ${path} is neither a folder nor a .tgz tarball. Give a payhooks checkout or a tarball made by npm pack.`,
    );
  }
  return { spec: `file:${path}`, installArg: shellQuote(path) };
}

/** What `payhooks init` wrote, and what to run next. */
export interface InitResult {
  dir: string;
  written: string[];
  nextCommands: string[];
  /** Said before the commands: where the project gets payhooks from, when not from the registry. */
  notes: string[];
}

/**
 * Copies a template into `dir` (created when missing), with a package.json when there is none. Writes nothing when
 * any file it would write already exists: the error names each one.
 *
 * @example
 * const { written, nextCommands } = initProject('direct-debit', './billing');
 */
export function initProject(template: InitTemplate, dir: string, version: string, options: InitOptions = {}): InitResult {
  const target = resolve(dir);
  const source = payhooksSource(options.from, version);
  if (existsSync(target) && !statSync(target).isDirectory()) {
    throw new UsageError(`init changed nothing: ${target} is a file, not a folder. Give init a folder (it creates one when missing).`);
  }
  const files = new Map<string, string>();
  for (const name of readdirSync(join(TEMPLATES_DIR, template)).sort()) {
    files.set(name, readFileSync(join(TEMPLATES_DIR, template, name), 'utf8'));
  }
  const hasPackageJson = existsSync(join(target, 'package.json'));
  if (!hasPackageJson) files.set('package.json', packageJson(target, template, source.spec));

  const existing = [...files.keys()].filter((name) => existsSync(join(target, name)));
  // serve reads the first configuration file it finds, so an older payhooks.config.js would silently win over the
  // template's .mjs (and a crm-sync connector would never run): that is a clash too, though the names differ.
  const shadowing = CONFIG_FILE_NAMES.filter((name) => !files.has(name) && existsSync(join(target, name)));
  const clashes = [...existing, ...shadowing];
  if (clashes.length > 0) {
    const why = shadowing.length > 0 ? ` (serve would read ${shadowing[0]} instead of the template's configuration)` : '';
    throw new UsageError(
      `init changed nothing: ${clashes.map((name) => join(target, name)).join(', ')} already ${clashes.length === 1 ? 'exists' : 'exist'}${why}. ` +
        `Move or delete ${clashes.length === 1 ? 'it' : 'them'}, or choose another folder.`,
    );
  }
  mkdirSync(target, { recursive: true });
  const written: string[] = [];
  try {
    // 'wx': a file that appeared since the check above is left alone (the write fails) rather than replaced.
    for (const [name, content] of files) {
      writeFileSync(join(target, name), content, { flag: 'wx' });
      written.push(name);
    }
  } catch (err) {
    // All or nothing, as promised: half a template would clash with the next attempt and run with no config.
    for (const name of written) rmSync(join(target, name), { force: true });
    throw err;
  }

  const shown = displayDir(target);
  const cd = shown === '.' ? '' : `cd ${shellQuote(shown)} && `;
  return {
    dir: target,
    written,
    nextCommands: [`${cd}${hasPackageJson ? `npm install ${source.installArg}` : 'npm install'}`, ...RUN_COMMANDS[template]],
    notes: source.note ? [source.note] : [],
  };
}

/** A path as a POSIX shell reads it back, so that the printed `cd` works for "my app" too. */
function shellQuote(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

const SECRET = 'PAYHOOKS_WEBHOOK_SECRET=dev-secret';
const WEBHOOKS_URL = 'http://127.0.0.1:8787/webhooks';

/** How to start each template and send it a first signed event (the catalog's example, from another terminal). */
const RUN_COMMANDS: Record<InitTemplate, [serve: string, trigger: string]> = {
  minimal: [
    `${SECRET} npx payhooks serve --handlers payhooks.handlers.mjs`,
    `${SECRET} npx payhooks trigger INVOICE_PAID --to ${WEBHOOKS_URL}`,
  ],
  'direct-debit': [
    `${SECRET} npx payhooks serve --handlers payhooks.handlers.mjs`,
    `${SECRET} npx payhooks trigger PAYMENT_METHOD_CREATED --to ${WEBHOOKS_URL}`,
  ],
  'crm-sync': [
    `CRM_URL=http://127.0.0.1:9000 ${SECRET} npx payhooks serve`,
    `${SECRET} npx payhooks trigger CUSTOMER_CREATED --to ${WEBHOOKS_URL}`,
  ],
};

function packageJson(dir: string, template: InitTemplate, payhooksSpec: string): string {
  // npm's rules for a name: lower case, no spaces; the folder's name is what `npm init -y` would pick too.
  const name =
    basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'payhooks-app';
  const serve = RUN_COMMANDS[template][0]
    .replace(`${SECRET} `, '')
    .replace(/^CRM_URL=\S+ /, '')
    .replace('npx ', '');
  const pkg = {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    scripts: { start: serve },
    dependencies: { payhooks: payhooksSpec },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** The folder as the user would type it: relative below the working directory, else absolute. */
function displayDir(dir: string): string {
  const rel = relative(process.cwd(), dir);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? dir : rel;
}

function templatesHelp(): string {
  const templates = Object.entries(INIT_TEMPLATES).flatMap(([name, summary]) => [
    `  ${name.padEnd(14)}${readdirSync(join(TEMPLATES_DIR, name)).sort().join(', ')}`,
    `  ${''.padEnd(14)}${summary}`,
  ]);
  return [
    '',
    'Templates (plain JavaScript modules, no build step; each also writes a package.json when DIR has none):',
    ...templates,
    '',
    'It never overwrites: when a file it would write exists (or a payhooks.config.js or .json that serve would read',
    'instead), it writes nothing, names each, and exits 1. Otherwise it prints the files and the next three commands:',
    'npm install, payhooks serve on the embedded database, and payhooks trigger sending it a signed example event.',
    '',
    'Examples:',
    '  payhooks init my-app',
    '  payhooks init --template direct-debit billing',
    '  payhooks init --template crm-sync',
    '  payhooks init --from ~/src/payhooks my-app      # a checkout (npm ci built it), or a tarball of npm pack',
  ].join('\n');
}

/**
 * Adds `payhooks init [--template NAME] [--from PATH] [DIR]`: scaffolds a handlers file, a configuration and a README (and a
 * package.json when DIR has none), refuses to overwrite anything, and prints the next three commands.
 */
export function addInitCommand(program: Command, ctx: CommandContext, version: string): void {
  program
    .command('init')
    .description('scaffold a handlers file, a configuration and a README into DIR (default: here); never overwrites a file')
    .argument('[dir]', 'the project folder, created when missing', '.')
    .addOption(
      new Option('--template <name>', 'what to start from').choices(Object.keys(INIT_TEMPLATES)).default('minimal' satisfies InitTemplate),
    )
    .option(
      '--from <path>',
      "where the project gets payhooks: a checkout's folder or a tarball of npm pack, as a file: dependency (default: this checkout when payhooks runs from one, else the npm registry)",
    )
    .addHelpText('after', templatesHelp)
    .action(async (dir: string, opts: { template: InitTemplate; from?: string }) => {
      const result = initProject(opts.template, dir, version, { from: opts.from });
      await ctx.out(
        [
          `payhooks init (${opts.template}) wrote in ${displayDir(result.dir)}:`,
          ...result.written.map((name) => `  ${name}`),
          ...(result.notes.length ? ['', ...result.notes] : []),
          '',
          'Next:',
          ...result.nextCommands.map(
            (command, i) => `  ${i + 1}. ${command}${i === 2 ? '   (in another terminal, in the same folder)' : ''}`,
          ),
          '',
          'README.md says what to change, and how to go live.',
        ].join('\n'),
      );
    });
}
