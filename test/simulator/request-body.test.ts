import { request } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REQUEST_BODY_BYTES } from '../../src/simulator/rest-handler.js';
import { type Simulator, SimulatorOptionError, startSimulator } from '../../src/simulator/index.js';
import { resolveSimulatorOptions } from '../../src/simulator/options.js';
import { errorMessage } from '../helpers/error-body.js';

let simulator: Simulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

/** Streams `total` bytes of JSON-ish text to POST /v1/customers; resolves to the answer and how much was sent. */
function upload(
  total: number,
  declareLength: boolean,
): Promise<{ status: number; body: unknown; connection: string | undefined; sent: number }> {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  const body = new Readable({
    read() {
      if (sent >= total) return this.push(null);
      const size = Math.min(chunk.length, total - sent);
      sent += size;
      this.push(chunk.subarray(0, size));
    },
  });
  return new Promise((resolve, reject) => {
    const req = request(`${simulator.url}/v1/customers`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer sk_test_simulator',
        'content-type': 'application/json',
        ...(declareLength ? { 'content-length': String(total) } : {}),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (part: Buffer) => chunks.push(part));
      res.on('end', () => {
        body.destroy();
        req.destroy();
        resolve({
          status: res.statusCode ?? 0,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
          connection: res.headers.connection,
          sent,
        });
      });
    });
    req.on('error', reject);
    body.pipe(req);
  });
}

describe('the simulator reads a request body up to 1 MiB, as the receiver does', () => {
  it.each([true, false])('refuses a 50 MiB body with 413 and stops reading it (Content-Length declared: %s)', async (declareLength) => {
    const total = 50 * 1024 * 1024;
    const answer = await upload(total, declareLength);
    expect(answer.status).toBe(413);
    expect(errorMessage(answer.body)).toBe(`The body is larger than the limit of ${MAX_REQUEST_BODY_BYTES} bytes.`);
    expect(answer.connection).toBe('close');
    expect(answer.sent).toBeLessThan(total);
  });

  it('reads a body of exactly the limit', async () => {
    const answer = await upload(MAX_REQUEST_BODY_BYTES, true);
    // Not JSON (all "a"), so the route refuses it, after reading it whole.
    expect(answer.status).toBe(400);
    expect(errorMessage(answer.body)).toBe('The body is not valid JSON.');
  });

  it('answers errors with the same function and content type as the receiver', async () => {
    const response = await fetch(`${simulator.url}/v1/nothing-here`, { headers: { authorization: 'Bearer sk_test_simulator' } });
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toEqual({ error: { message: 'No route GET /v1/nothing-here.' } });
  });
});

describe('SimulatorOptionError', () => {
  it('is a RangeError (a configuration mistake) whose message names the option and what it takes', () => {
    let error: unknown;
    try {
      resolveSimulatorOptions({ duplicateRate: 2 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SimulatorOptionError);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).name).toBe('SimulatorOptionError');
    expect((error as Error).message).toBe('duplicateRate must be between 0 and 1, not 2.');
  });
});
