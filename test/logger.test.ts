import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/logger.js';

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
