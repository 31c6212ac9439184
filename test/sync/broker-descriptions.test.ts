import { describe, expect, it } from 'vitest';
import { natsPublisher } from '../../src/sync/brokers/nats.js';

// The description goes to the start-up line and to every log of the sink: credentials in a server URL must not.
describe('how a NATS sink names its servers', () => {
  it('drops the user and password (or token) of each server URL, and keeps host, port and stream', async () => {
    const publisher = natsPublisher({
      servers: ['nats://alice:s3cret-pass@127.0.0.1:4222', 'tls://t0ken-value@nats.internal:4443', '127.0.0.1:4223'],
      stream: 'EVENTS',
    });
    try {
      expect(publisher.describe).toBe('nats://127.0.0.1:4222,tls://nats.internal:4443,127.0.0.1:4223 stream EVENTS');
      expect(publisher.describe).not.toMatch(/s3cret|alice|t0ken/);
    } finally {
      await publisher.close();
    }
  });
});
