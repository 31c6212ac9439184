// `payhooks trigger` and `payhooks simulate` refusing what they are given, driven in-process through the CLI's `run()`
// (no process per case): test/simulator/cli.test.ts runs them as processes for what needs one (a server, a signal).
import { describe, expect, it } from 'vitest';
import { runInProcess } from '../helpers/cli.js';

describe('payhooks trigger refuses', () => {
  it.each([
    [
      ['trigger', 'INVOICE_EXPLODED', '--to', 'http://127.0.0.1:1/webhooks', '--secret', 's'],
      {},
      /Unknown event type "INVOICE_EXPLODED"\. Known types:[\s\S]*PAYMENT_COMPLETED/,
    ],
    [
      ['trigger', 'INVOICE_PAID', '--to', 'http://127.0.0.1:1/webhooks'],
      { PAYHOOKS_WEBHOOK_SECRET: undefined },
      /No signing secret: pass --secret S or set PAYHOOKS_WEBHOOK_SECRET/,
    ],
    [['trigger', 'INVOICE_PAID', '--to', 'not a url', '--secret', 's'], {}, /--to takes the receiver's URL/],
    [
      ['trigger', 'INVOICE_PAID', '--secret', 's'],
      { PAYHOOKS_API_URL: undefined },
      /No simulator to run INVOICE_PAID in: start one with payhooks simulate --forward-to[\s\S]*pass --to URL/,
    ],
    [
      ['trigger', 'INVOICE_PAID', '--to', 'http://127.0.0.1:1/webhooks', '--secret', 's'],
      {},
      /Could not deliver to http:\/\/127\.0\.0\.1:1\/webhooks: .*ECONNREFUSED/,
    ],
    [['trigger', 'cash-paymnt'], {}, /Unknown flow "cash-paymnt"\. Flows: cash-payment, transfer-payment, mark-paid/],
    [
      ['trigger', 'cash-payment', '--to', 'http://127.0.0.1:1/webhooks'],
      {},
      /the flow cash-payment runs in the simulator[\s\S]*Leave out --to/,
    ],
    [['trigger', 'refund', '--simulator', 'localhost:4010'], {}, /--simulator must be an http or https URL, not "localhost:4010"/],
    [
      ['trigger', 'cash-payment', '--simulator', 'http://127.0.0.1:1'],
      {},
      /flow cash-payment stopped after 0 steps: GET \/v1\/sandbox\/events: could not reach the service[\s\S]*Nothing answers at http:\/\/127\.0\.0\.1:1/,
    ],
    [
      ['trigger', 'CUSTOMER_ARCHIVED', '--simulator', 'http://127.0.0.1:1'],
      {},
      /No flow causes CUSTOMER_ARCHIVED[\s\S]*payhooks trigger CUSTOMER_ARCHIVED --to http:\/\/127\.0\.0\.1:8787\/webhooks/,
    ],
    [
      ['trigger', 'refund'],
      { PAYHOOKS_API_URL: 'http://127.0.0.1:1', PAYHOOKS_API_KEY: 'sk_live_real' },
      /staging key \(sk_test_…\), not a production key/,
    ],
  ] as const)('payhooks %j fails clearly', async (args, env, message) => {
    const result = await runInProcess([...args], { ...env });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
  });
});

describe('payhooks simulate refuses', () => {
  it.each([
    [['simulate', '--duplicate-rate', '2'], /--duplicate-rate takes a probability between 0 and 1, not "2"/],
    [['simulate', '--fail-rate', '-0.5'], /--fail-rate takes a probability between 0 and 1/],
    [['simulate', '--time-scale', '0'], /--time-scale takes a number greater than 0/],
    [['simulate', '--port', 'http'], /--port takes a whole number from 0 to 65535/],
    [['simulate', '--forward-to', 'http://example.com/webhooks'], /--forward-to takes the receiver's URL, https or http on localhost/],
    [['simulate', '--forward-to', 'not a url'], /--forward-to takes the receiver's URL/],
    [
      ['simulate', '--forward-to', 'http://127.0.0.1:8787/webhooks', '--events', 'INVOICE_PAID,NOPE'],
      /--events takes event types separated by commas, e.g. INVOICE_PAID,PAYMENT_COMPLETED; unknown: NOPE\. Known types: INVOICE_CREATED/,
    ],
    [['simulate', '--port', '0', '--events', 'INVOICE_PAID'], /--events chooses what --forward-to receives: give --forward-to URL too/],
  ] as const)('payhooks %j fails clearly', async (args, message) => {
    const result = await runInProcess([...args]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
  });
});
