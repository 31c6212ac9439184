import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { describeThrown } from '../src/internal/scrub.js';
import { createLogger, lazyScrubbingChild, scrubbingChild } from '../src/logger.js';
import { createPayhooks } from '../src/payhooks.js';

describe('the default logger', () => {
  it('blanks out secrets and personal data wherever a handler puts them', () => {
    let output = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        output += chunk;
        done();
      },
    });
    const logger = createLogger({ level: 'info' }, sink);
    logger.info(
      {
        secret: 'whsec_top',
        apiKey: 'sk_live_123',
        headers: { authorization: 'Bearer sk_live_123', 'x-webhook-signature': 'v1=abc' },
        customer: { email: 'ada@example.com', phoneNumber: '+525500000001', id: 'cus_1' },
        card: { cardholder: 'ADA EXAMPLE', last4: '4242' },
        data: { anything: 'from the payload' },
      },
      'handled',
    );
    for (const leaked of ['whsec_top', 'sk_live_123', 'v1=abc', 'ada@example.com', '+525500000001', 'ADA EXAMPLE', 'from the payload']) {
      expect(output).not.toContain(leaked);
    }
    expect(output).toContain('cus_1');
    expect(output).toContain('4242');
  });
});

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { sink, text: () => lines.join('') };
}

describe('scrubbing at any depth', () => {
  const personal = ['ada@example.com', '+525500000001', '+52 55 1234 5678', 'sk_live_abc123', 'whsec_c2VjcmV0'];
  const event = {
    eventId: 'evt_1',
    nested: { deeper: { customer: { contact: { email: 'ada@example.com', phoneNumber: '+525500000001' } } } },
    note: 'call +52 55 1234 5678 or write to ada@example.com',
    keys: [{ authorization: 'Bearer sk_live_abc123' }, 'whsec_c2VjcmV0'],
  };

  it('masks emails, phones and keys however deep a logged object puts them, and in strings', () => {
    const { sink, text } = capture();
    createLogger({ level: 'info' }, sink).info({ event }, 'handler logged the event');
    for (const leaked of personal) expect(text()).not.toContain(leaked);
    expect(text()).toContain('evt_1');
  });

  it('masks them in error messages and drops what a database error echoes (detail)', () => {
    const { sink, text } = capture();
    const err = Object.assign(new Error('duplicate key value for +525500000001'), {
      code: '23505',
      detail: 'Key (email)=(ada@example.com)',
    });
    createLogger({ level: 'info' }, sink).error({ err }, 'could not store');
    expect(text()).not.toContain('+525500000001');
    expect(text()).not.toContain('ada@example.com');
    expect(JSON.parse(text()).err).toMatchObject({ type: 'Error', code: '23505' });
  });

  it('caps a 10 MB error message, noting its length', () => {
    const { sink, text } = capture();
    createLogger({ level: 'info' }, sink).error(new Error('x'.repeat(10_000_000)));
    expect(text().length).toBeLessThan(40_000);
    expect(text()).toContain('10000000 characters in all');
  });

  it('logs values that cannot be turned into text without throwing', () => {
    const { sink, text } = capture();
    const hostile = {
      get boom() {
        throw new Error('no');
      },
    };
    createLogger({ level: 'info' }, sink).info({ a: Object.create(null), hostile }, 'odd values');
    expect(text()).toContain('odd values');
  });

  it("a scrubbing child of an app's own pino logger masks the same way", () => {
    const { sink, text } = capture();
    const log = scrubbingChild(pino({ level: 'info' }, sink), { eventId: 'evt_1' }).child({ handler: 'h' });
    log.info({ customer: event.nested.deeper.customer }, 'from a handler');
    log.warn(event.note);
    for (const leaked of personal) expect(text()).not.toContain(leaked);
    expect(text()).toContain('"eventId":"evt_1"');
    expect(text()).toContain('"handler":"h"');
  });

  it("what payhooks logs through an app's own logger is scrubbed too: a database error's parameters stay out", () => {
    const { sink, text } = capture();
    const hooks = createPayhooks({ logger: pino({ level: 'info' }, sink), database: { dataDir: 'memory://' } });
    // As a driver reports a failed statement: its parameters (a customer's name and email) on the error itself.
    const failed = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
      code: '22021',
      params: ['Ada Lovelace', 'ada@example.com'],
    });
    hooks.logger.warn({ err: failed, eventId: 'evt_1' }, 'could not record the outcome of an event; trying again');
    expect(text()).toContain('"code":"22021"');
    expect(text()).toContain('"eventId":"evt_1"');
    expect(text()).not.toContain('Ada Lovelace');
    expect(text()).not.toContain('ada@example.com');
  });
});

describe('describeThrown', () => {
  it('turns any thrown value into capped text without throwing', () => {
    expect(describeThrown(new TypeError('bad'))).toBe('TypeError: bad');
    expect(describeThrown(Object.create(null))).toMatch(/without prototype/);
    expect(describeThrown(Object.assign(Object.create(null), { message: 'm' }))).toContain('"message":"m"');
    const hostile = {
      toString: () => {
        throw new Error('no');
      },
    };
    expect(typeof describeThrown(hostile)).toBe('string');
    expect(describeThrown('y'.repeat(100_000)).length).toBeLessThan(9000);
  });
});

describe('a child made when first needed (the worker makes one per event)', () => {
  it('writes nothing and makes no child for a level the parent leaves out', () => {
    const { sink, text } = capture();
    const parent = createLogger({ level: 'warn' }, sink);
    let children = 0;
    const counting = new Proxy(parent, {
      get(target, property, receiver) {
        if (property === 'child') children++;
        return Reflect.get(target, property, receiver);
      },
    });
    const log = lazyScrubbingChild(counting, { eventId: 'evt_1', note: 'ada@example.com' });
    log.info('event processed');
    log.child({ handler: 'crm' }).debug('ran');
    expect(children).toBe(0);
    expect(text()).toBe('');
  });

  it('logs with every binding, scrubbed, at a level the parent writes, and its children carry theirs', () => {
    const { sink, text } = capture();
    const log = lazyScrubbingChild(createLogger({ level: 'info' }, sink), { eventId: 'evt_1', note: 'write to ada@example.com' });
    log.child({ handler: 'crm' }).warn({ customer: { email: 'ada@example.com' } }, 'handler failed');
    const line = JSON.parse(text()) as Record<string, unknown>;
    expect(line).toMatchObject({ eventId: 'evt_1', handler: 'crm', msg: 'handler failed' });
    expect(text()).not.toContain('ada@example.com');
  });

  it('takes a level set on it for itself, not for its parent', () => {
    const { sink, text } = capture();
    const parent = createLogger({ level: 'warn' }, sink);
    const log = lazyScrubbingChild(parent, { eventId: 'evt_1' });
    log.level = 'debug';
    log.debug('now written');
    parent.debug('still left out');
    expect(text()).toContain('now written');
    expect(text()).not.toContain('still left out');
  });
});
