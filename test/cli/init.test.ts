// `payhooks init` as a newcomer uses it: in an empty folder, then "npm install" (here: the package linked into
// node_modules, as npm would place it, so the scaffolded files import the built package and `npx payhooks` is
// its bin), then the printed commands, run as written.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { buildIfStale, type CliResult, collect, runCli, waitForLog } from '../helpers/cli.js';
import { freePort, listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const realRepo = realpathSync(repo);
const execFileAsync = promisify(execFile);
const TEMPLATES = ['minimal', 'direct-debit', 'crm-sync'] as const;

const folders: string[] = [];
const emptyFolder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-init-'));
  folders.push(dir);
  return dir;
};
// Each run leaves an embedded database behind; rm unlinks node_modules/payhooks without following it into the repo.
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** The numbered lines under "Next:". */
function nextCommands(stdout: string): string[] {
  return [...stdout.matchAll(/^ {2}\d\. (.+?)(?: {3}\(in another terminal.*\))?$/gm)].map((match) => match[1]!);
}

/** What `npm install` leaves that matters here: payhooks in node_modules, and its bin. */
function installPayhooks(dir: string): void {
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  symlinkSync(repo, join(dir, 'node_modules', 'payhooks'), 'dir');
}

/**
 * Runs a printed `VAR=value … npx payhooks ARGS` line as a shell would, with the installed bin; `port` replaces
 * the default port in it and is given to serve, so that tests never collide on 8787.
 */
function spawnPrinted(line: string, dir: string, port: number): ChildProcess {
  const words = line.replaceAll('8787', String(port)).split(' ');
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: '',
  };
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, value] = words.shift()!.split('=') as [string, string];
    env[name] = value;
  }
  expect(words.slice(0, 2)).toEqual(['npx', 'payhooks']);
  const bin = join(dir, 'node_modules', 'payhooks', 'bin', 'payhooks.js');
  return spawn(process.execPath, [bin, ...words.slice(2)], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

const runPrinted = (line: string, dir: string, port: number): Promise<CliResult> => collect(spawnPrinted(line, dir, port), 120_000);

/**
 * `payhooks init [args]` in a new folder, "npm install", then the printed serve (its line passed through `edit`) and,
 * once it receives, the printed trigger; `effect` is set up before the trigger and awaited before serve is stopped.
 */
async function initAndRun(
  args: string[],
  effect: (serve: ChildProcess) => Promise<unknown>,
  edit: (serveLine: string) => string = (line) => line,
): Promise<{ dir: string; install: string; trigger: CliResult }> {
  const dir = emptyFolder();
  const init = await runCli(['init', ...args], {}, dir);
  expect(init.code, init.stderr).toBe(0);
  const [install, serveLine, triggerLine] = nextCommands(init.stdout) as [string, string, string];
  installPayhooks(dir);
  const port = await freePort();
  const serve = spawnPrinted(edit(serveLine), dir, port);
  const served = collect(serve, 280_000);
  let trigger: CliResult;
  try {
    // The embedded database's first start: over 60 s beside two CPU hogs at load 28.
    await waitForLog(serve, /receiving webhooks/, 150_000);
    const done = effect(serve);
    trigger = await runPrinted(triggerLine, dir, port);
    expect(trigger.code, trigger.stderr).toBe(0);
    await done;
  } finally {
    serve.kill('SIGTERM');
  }
  expect((await served).code).toBe(0);
  return { dir, install, trigger };
}

describe('payhooks init', () => {
  it.each(TEMPLATES)(
    '--template %s in an empty folder writes the template, a package.json, and prints the next three commands',
    async (template) => {
      const dir = join(emptyFolder(), 'my-app');
      const result = await runCli(['init', '--template', template, dir]);
      expect(result.code, result.stderr).toBe(0);
      const written = readdirSync(dir).sort();
      expect(written).toEqual([...readdirSync(join(repo, 'templates', 'init', template)), 'package.json'].sort());
      for (const name of written) expect(result.stdout).toContain(`  ${name}\n`);
      for (const name of written.filter((file) => file !== 'package.json'))
        expect(readFileSync(join(dir, name), 'utf8')).toBe(readFileSync(join(repo, 'templates', 'init', template, name), 'utf8'));
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      // Run from this checkout (not an installed package): the project depends on the checkout, which npm can
      // install, not on a registry version it may not have.
      expect(pkg).toMatchObject({ name: 'my-app', private: true, type: 'module', dependencies: { payhooks: `file:${realRepo}` } });
      expect(result.stdout).toContain(`payhooks runs from the checkout at ${realRepo}: the project depends on it (file:)`);
      const commands = nextCommands(result.stdout);
      expect(commands).toHaveLength(3);
      expect(commands[0]).toBe(`cd ${dir} && npm install`);
      expect(commands[1]).toMatch(/npx payhooks serve/);
      expect(commands[2]).toMatch(/npx payhooks trigger [A-Z_]+ --to http:\/\/127\.0\.0\.1:8787\/webhooks$/);
    },
    // Each case starts CLI processes: about 10 s each at load 25, room for a machine 3-4 times slower than idle.
    120_000,
  );

  it('minimal: after npm install, the printed serve receives the printed trigger, and the handler runs once', {
    timeout: 300_000,
  }, async () => {
    let handled: Record<string, unknown> | undefined;
    const { dir, install, trigger } = await initAndRun([], async (serve) => {
      handled = await waitForLog(serve, /^INVOICE_PAID: invoice paid$/, 90_000);
    });
    expect(install).toBe('npm install');
    expect(trigger.stdout).toMatch(/200/);
    expect(handled).toMatchObject({ invoiceId: expect.stringMatching(/^inv_/) });
    const listed = await runPrinted('npx payhooks events list --json', dir, await freePort());
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ eventType: 'INVOICE_PAID', status: 'done', attempts: 1 })]);
  });

  it('direct-debit: the printed commands record the mandate, masked, in the templates’ schema', { timeout: 300_000 }, async () => {
    const { dir } = await initAndRun(['--template', 'direct-debit'], (serve) => waitForLog(serve, /^event processed$/, 90_000));
    const store = await openDatabase({ dataDir: join(dir, '.payhooks', 'pgdata') });
    try {
      const { rows } = await sql<{ type: string; status: string; card_last4: string | null; clabe_last: string | null }>`
        select type, status, card_last4, clabe_last from direct_debit.mandates`.execute(store.db.withoutPlugins());
      expect(rows).toHaveLength(1);
      expect(rows[0]!.status).toBe('active');
      expect(rows[0]!.card_last4 ?? rows[0]!.clabe_last).toMatch(/^\d{2,4}$/);
    } finally {
      await store.close();
    }
  });

  it('crm-sync: the printed serve runs the connector, which PUTs the customer to the CRM with an idempotency key', {
    timeout: 300_000,
  }, async () => {
    const received: { method: string; url: string; key: string | undefined; body: unknown }[] = [];
    const crm = await listen(
      createServer((req, res) => {
        let body = '';
        req.on('data', (chunk) => (body += chunk));
        req.on('end', () => {
          received.push({
            method: req.method!,
            url: req.url!,
            key: req.headers['idempotency-key'] as string | undefined,
            body: JSON.parse(body),
          });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
      }),
    );
    try {
      await initAndRun(
        ['--template', 'crm-sync'],
        () => waitFor(() => received.length > 0, 'the connector to call the CRM', 30_000),
        (serveLine) => serveLine.replace('http://127.0.0.1:9000', crm.url),
      );
    } finally {
      await crm.close();
    }
    expect(received).toEqual([
      {
        method: 'PUT',
        url: expect.stringMatching(/^\/customers\/cus_/),
        key: expect.stringMatching(/^ph_[0-9a-f]{32}$/),
        body: expect.objectContaining({ id: expect.stringMatching(/^cus_/) }),
      },
    ]);
  });

  it('run again in the same folder, refuses, names each existing file, and changes nothing', { timeout: 120_000 }, async () => {
    const dir = emptyFolder();
    expect((await runCli(['init', '--template', 'crm-sync'], {}, dir)).code).toBe(0);
    const before = new Map(
      readdirSync(dir).map((name) => [name, { text: readFileSync(join(dir, name), 'utf8'), mtime: statSync(join(dir, name)).mtimeMs }]),
    );
    const again = await runCli(['init', '--template', 'crm-sync'], {}, dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^payhooks: init changed nothing: .* already exist\. Move or delete them, or choose another folder\.$/m);
    for (const name of ['README.md', 'crm-connector.mjs', 'payhooks.config.mjs']) expect(again.stderr).toContain(join(dir, name));
    expect(readdirSync(dir).sort()).toEqual([...before.keys()].sort());
    for (const [name, { text, mtime }] of before) {
      expect(readFileSync(join(dir, name), 'utf8')).toBe(text);
      expect(statSync(join(dir, name)).mtimeMs).toBe(mtime);
    }
  });

  it('in a project with a package.json, leaves it alone and says npm install <the checkout>; one clash writes nothing at all', {
    timeout: 120_000,
  }, async () => {
    const dir = emptyFolder();
    const pkg = '{ "name": "existing", "version": "1.0.0" }\n';
    writeFileSync(join(dir, 'package.json'), pkg);
    const result = await runCli(['init'], {}, dir);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(pkg);
    expect(nextCommands(result.stdout)[0]).toBe(`npm install ${realRepo}`);

    const other = emptyFolder();
    writeFileSync(join(other, 'README.md'), '# mine\n');
    const clash = await runCli(['init', '--template', 'direct-debit'], {}, other);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain(`${join(other, 'README.md')} already exists`);
    expect(readdirSync(other)).toEqual(['README.md']);
  });

  it('refuses a configuration file serve would read instead of the template’s, and a DIR that is a file; quotes DIR in cd', {
    timeout: 120_000,
  }, async () => {
    const project = emptyFolder();
    writeFileSync(join(project, 'payhooks.config.js'), 'export default {};\n');
    const shadowed = await runCli(['init', '--template', 'crm-sync'], {}, project);
    expect(shadowed.code).toBe(1);
    expect(shadowed.stderr).toContain(
      `${join(project, 'payhooks.config.js')} already exists (serve would read payhooks.config.js instead of the template's configuration). Move or delete it`,
    );
    expect(readdirSync(project)).toEqual(['payhooks.config.js']);

    const file = join(emptyFolder(), 'notes.txt');
    writeFileSync(file, 'mine\n');
    const notFolder = await runCli(['init', file]);
    expect(notFolder.code).toBe(1);
    expect(notFolder.stderr).toContain(`payhooks: init changed nothing: ${file} is a file, not a folder.`);
    expect(readFileSync(file, 'utf8')).toBe('mine\n');

    const parent = emptyFolder();
    const spaced = await runCli(['init', "Bob's app"], {}, parent);
    expect(spaced.code, spaced.stderr).toBe(0);
    const [install] = nextCommands(spaced.stdout) as [string];
    expect(install).toBe(`cd 'Bob'\\''s app' && npm install`);
    // As a shell reads it back: the folder init wrote into.
    expect(execFileSync('sh', ['-c', install.replace('npm install', 'pwd')], { cwd: parent, encoding: 'utf8' }).trim()).toBe(
      join(parent, "Bob's app"),
    );
    expect(readdirSync(join(parent, "Bob's app"))).toContain('payhooks.handlers.mjs');
  });

  it('--help names each template, the files it writes and what it runs', { timeout: 120_000 }, async () => {
    const help = await runCli(['init', '--help']);
    expect(help.code).toBe(0);
    for (const template of TEMPLATES) {
      const files = readdirSync(join(repo, 'templates', 'init', template))
        .sort()
        .join(', ');
      expect(help.stdout).toMatch(new RegExp(`^  ${template} +${files.replaceAll('.', '\\.')}$`, 'm'));
    }
    expect(help.stdout).toContain('It never overwrites');
  });

  it('--from this checkout: npm install (offline) links it, and the project imports payhooks and runs its bin', {
    timeout: 240_000,
  }, async () => {
    // The build the link serves; npm's own run of the checkout's prepare is skipped below (--ignore-scripts), since
    // it would rebuild dist/ under the CLI processes of other test files.
    await buildIfStale();
    const dir = join(emptyFolder(), 'from-checkout');
    const init = await runCli(['init', '--from', repo, dir]);
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies).toEqual({
      payhooks: `file:${repo.replace(/\/$/, '')}`,
    });
    const [install] = nextCommands(init.stdout) as [string];
    expect(install).toBe(`cd ${dir} && npm install`);
    // Offline: a checkout needs nothing from the registry (its dependencies are in its own node_modules).
    await execFileAsync('npm', ['install', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, timeout: 180_000 });
    const loaded = await execFileAsync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('payhooks'); console.log(typeof m.createPayhooks, typeof m.WORKER_DEFAULTS)"],
      { cwd: dir, timeout: 60_000 },
    );
    expect(loaded.stdout.trim()).toBe('function object');
    const bin = await execFileAsync(join(dir, 'node_modules', '.bin', 'payhooks'), ['--version'], { cwd: dir, timeout: 60_000 });
    expect(bin.stdout.trim()).toBe(JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version);
  });

  it('--from a tarball of npm pack is a file: dependency; a path that is neither a checkout nor a tarball writes nothing', {
    timeout: 120_000,
  }, async () => {
    const tarball = join(emptyFolder(), 'payhooks-0.1.0.tgz');
    writeFileSync(tarball, '');
    const dir = join(emptyFolder(), 'from-tarball');
    const packed = await runCli(['init', '--from', tarball, dir]);
    expect(packed.code, packed.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies).toEqual({ payhooks: `file:${tarball}` });
    expect(packed.stdout).not.toContain('runs from the checkout');

    const other = emptyFolder();
    writeFileSync(join(other, 'package.json'), '{ "name": "not-payhooks" }\n');
    const target = join(emptyFolder(), 'refused');
    const notCheckout = await runCli(['init', '--from', other, target]);
    expect(notCheckout.code).toBe(1);
    expect(notCheckout.stderr).toContain(`payhooks: init changed nothing: --from ${other} is not a payhooks checkout`);
    const missing = await runCli(['init', '--from', join(other, 'nope.tgz'), target]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`--from ${join(other, 'nope.tgz')} does not exist`);
    expect(existsSync(target)).toBe(false);
  });

  it('an unknown template is refused with the valid ones', { timeout: 120_000 }, async () => {
    const dir = emptyFolder();
    const result = await runCli(['init', '--template', 'stripe', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("argument 'stripe' is invalid. Allowed choices are minimal, direct-debit, crm-sync.");
    expect(readdirSync(dir)).toEqual([]);
  });
});
