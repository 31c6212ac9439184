import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Command, Option } from 'commander';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';

/** The templates of `payhooks init`, in `--help` order, each a folder of `templates/init/`. */
export const INIT_TEMPLATES = {
  minimal: 'a handlers file with one handler for paid invoices, to fill in',
  'direct-debit': 'the direct-debit handler templates (mandates, collections, dunning, subscriptions, disputes) with a dunning hook',
  'crm-sync': 'a connector that syncs customers and invoices to a CRM over HTTP, and the Postgres mirror',
} as const;

/** The name of an init template. */
export type InitTemplate = keyof typeof INIT_TEMPLATES;

// Two levels up from both src/cli/ and dist/cli/: the package root, where templates/ is published.
const TEMPLATES_DIR = fileURLToPath(new URL('../../templates/init/', import.meta.url));

/** What `payhooks init` wrote, and what to run next. */
export interface InitResult {
  dir: string;
  written: string[];
  nextCommands: string[];
}

/**
 * Copies a template into `dir` (created when missing), with a package.json when there is none. Writes nothing when
 * any file it would write already exists: the error names each one.
 *
 * @example
 * const { written, nextCommands } = initProject('direct-debit', './billing');
 */
export function initProject(template: InitTemplate, dir: string, version: string): InitResult {
  const target = resolve(dir);
  const files = new Map<string, string>();
  for (const name of readdirSync(join(TEMPLATES_DIR, template)).sort()) {
    files.set(name, readFileSync(join(TEMPLATES_DIR, template, name), 'utf8'));
  }
  const hasPackageJson = existsSync(join(target, 'package.json'));
  if (!hasPackageJson) files.set('package.json', packageJson(target, template, version));

  const existing = [...files.keys()].filter((name) => existsSync(join(target, name)));
  if (existing.length > 0) {
    throw new UsageError(
      `init changed nothing: ${existing.map((name) => join(target, name)).join(', ')} already ${existing.length === 1 ? 'exists' : 'exist'}. ` +
        'Move or delete them, or choose another folder.',
    );
  }
  mkdirSync(target, { recursive: true });
  // 'wx': a file that appeared since the check above is left alone (the write fails) rather than replaced.
  for (const [name, content] of files) writeFileSync(join(target, name), content, { flag: 'wx' });

  const cd = displayDir(target) === '.' ? '' : `cd ${displayDir(target)} && `;
  return {
    dir: target,
    written: [...files.keys()],
    nextCommands: [`${cd}${hasPackageJson ? 'npm install payhooks' : 'npm install'}`, ...RUN_COMMANDS[template]],
  };
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

function packageJson(dir: string, template: InitTemplate, version: string): string {
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
    dependencies: { payhooks: `^${version}` },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** The folder as the user would type it: relative below the working directory, else absolute. */
function displayDir(dir: string): string {
  const rel = relative(process.cwd(), dir);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? dir : rel;
}

/**
 * Adds `payhooks init [--template NAME] [DIR]`: scaffolds a handlers file, a configuration and a README (and a
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
    .addHelpText(
      'after',
      `\nTemplates:\n${Object.entries(INIT_TEMPLATES)
        .map(([name, summary]) => `  ${name.padEnd(14)}${summary}`)
        .join('\n')}`,
    )
    .action((dir: string, opts: { template: InitTemplate }) => {
      const result = initProject(opts.template, dir, version);
      ctx.out(
        [
          `payhooks init (${opts.template}) wrote in ${displayDir(result.dir)}:`,
          ...result.written.map((name) => `  ${name}`),
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
