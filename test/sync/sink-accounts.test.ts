import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSyncConfig } from '../../src/sync/config.js';
import { defineConnector } from '../../src/sync/connector.js';
import { HandlerRegistry } from '../../src/worker/handlers.js';

// Issue 48: a sink may be limited to some accounts (`accounts: [...]` on any sink entry, or on a connector); its
// handler is then not due for another account's events: the registry does not list it for them.

describe('sinks per account', () => {
  it('the registry lists a handler limited to accounts only for those accounts, and every other for all', () => {
    const registry = new HandlerRegistry();
    registry.on('INVOICE_PAID', () => undefined, { name: 'forward:north-erp', accounts: ['north'] });
    registry.on('INVOICE_PAID', () => undefined, { name: 'mirror' });
    registry.onAny(() => undefined, { name: 'broker:both', accounts: ['north', 'south'] });
    const names = (type: string, account?: string) => registry.for(type, account).map((h) => h.name);
    expect(names('INVOICE_PAID', 'north')).toEqual(['forward:north-erp', 'mirror', 'broker:both']);
    expect(names('INVOICE_PAID', 'south')).toEqual(['mirror', 'broker:both']);
    expect(names('INVOICE_PAID', 'west')).toEqual(['mirror']);
    expect(names('CUSTOMER_CREATED', 'west')).toEqual([]);
    // Asked again after a registration: the lists per (type, account) are made afresh.
    registry.on('INVOICE_PAID', () => undefined, { name: 'late', accounts: ['west'] });
    expect(names('INVOICE_PAID', 'west')).toEqual(['mirror', 'late']);
    expect(() => registry.on('INVOICE_PAID', () => undefined, { name: 'none', accounts: [] })).toThrow(/non-empty array of account ids/);
  });

  it('the configuration takes accounts on forward targets, brokers and sinks entries, and refuses a bad id with its key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-sink-accounts-'));
    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({
        forward: [{ name: 'erp', url: 'https://erp.example.com/in', secret: 'whsec_erp', accounts: ['north', 'north'] }],
        sinks: [{ kind: 'http-forward', name: 'all', url: 'https://all.example.com/in', secret: 'whsec_all' }],
      }),
    );
    const config = await loadSyncConfig({ cwd: dir });
    expect(config.forward.map((target) => [target.name, target.accounts])).toEqual([['erp', ['north']]]);
    expect(config.sinks.map((entry) => [entry.options.name, entry.options.accounts])).toEqual([['all', undefined]]);

    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({
        forward: [{ name: 'erp', url: 'https://erp.example.com/in', secret: 'whsec_erp', accounts: ['North'] }],
        sinks: [{ kind: 'http-forward', name: 'all', url: 'https://all.example.com/in', secret: 'whsec_all', accounts: [] }],
      }),
    );
    const error = await loadSyncConfig({ cwd: dir }).catch((err: Error) => err);
    expect(String((error as Error).message)).toMatch(/forward\.0\.accounts\.0: expected an account id/);
    expect(String((error as Error).message)).toMatch(/sinks\.0\.accounts: list at least one account/);
  });

  it('a connector takes accounts too, checked when it is defined', () => {
    const crm = defineConnector({ name: 'crm', events: '*', accounts: ['north'], handle: () => undefined });
    expect(crm.accounts).toEqual(['north']);
    expect(() => defineConnector({ name: 'bad', events: '*', accounts: ['Gym North'], handle: () => undefined })).toThrow(
      /defineConnector bad: accounts: expected an account id/,
    );
  });
});
