// Verification alone, in this process: the default scheme against a raw node:crypto loop and two packages.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { sign as octokitSign, verify as octokitVerify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { root } from '../lib/processes.js';
import { deliveryBody, SECRET, signedHeaders } from '../lib/load.js';
import type { Section } from '../lib/report.js';
import { median, rounds, scaled, times, whole } from '../lib/stats.js';

type Contender = { name: string; run: (n: number) => Promise<void> | void };

export async function benchVerify(): Promise<Section> {
  const body = deliveryBody('verify', 1);
  const raw = Buffer.from(body);
  const headers = signedHeaders(body);
  // The compiled code, as users run it (the bench itself runs under tsx, which wraps functions it transpiles).
  const { createDefaultScheme } = (await import(`${root}dist/signature/index.js`)) as typeof import('../../src/signature/index.js');
  const scheme = createDefaultScheme({ secrets: [SECRET] });

  const timestamp = headers['x-webhook-timestamp']!;
  const signatureHex = headers['x-webhook-signature']!.slice(3);
  const rawLoop = (n: number) => {
    for (let i = 0; i < n; i++) {
      const given = Buffer.from(signatureHex, 'hex');
      const expected = createHmac('sha256', SECRET).update(`${timestamp}.`).update(raw).digest();
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('raw loop: no match');
    }
  };
  const payhooks = (n: number) => {
    for (let i = 0; i < n; i++) scheme.verify({ headers, rawBody: raw });
  };

  const swSecret = Buffer.from(SECRET).toString('base64');
  const standard = new Webhook(swSecret);
  const swHeaders = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': timestamp,
    'webhook-signature': standard.sign('msg_1', new Date(Number(timestamp) * 1000), body),
  };
  const standardWebhooks = (n: number) => {
    for (let i = 0; i < n; i++) standard.verify(body, swHeaders, { jsonParse: false });
  };

  const octokitSignature = await octokitSign(SECRET, body);
  const octokit = async (n: number) => {
    for (let i = 0; i < n; i++) if (!(await octokitVerify(SECRET, body, octokitSignature))) throw new Error('octokit: no match');
  };

  const contenders: Contender[] = [
    { name: 'payhooks default scheme (`scheme.verify`)', run: payhooks },
    { name: 'raw node:crypto HMAC + timingSafeEqual', run: rawLoop },
    { name: '`standardwebhooks` 1.x (`Webhook.verify`, no JSON parse)', run: standardWebhooks },
    { name: '`@octokit/webhooks-methods` 6 (`verify`, async)', run: octokit },
  ];
  const n = scaled(100_000);
  for (const contender of contenders) await contender.run(Math.min(n, 2000)); // warm up
  const perSecond = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < rounds(); round++) {
    for (const contender of contenders) {
      const started = performance.now();
      await contender.run(n);
      perSecond.get(contender.name)!.push((n / (performance.now() - started)) * 1000);
    }
  }
  const rawRate = median(perSecond.get(contenders[1]!.name)!);
  const payhooksRate = median(perSecond.get(contenders[0]!.name)!);
  return {
    title: 'Verify',
    about: `Verifying one signed ${raw.length}-byte body, ${whole(n)} times per round, ${rounds()} rounds alternating between contenders, in one process. Each contender checks the same thing: an HMAC-SHA256 over the body compared in constant time (the packages with their own header formats).`,
    header: ['contender', 'verifications/s (median)', 'vs raw node:crypto'],
    rows: contenders.map((c) => {
      const rate = median(perSecond.get(c.name)!);
      return [c.name, whole(rate), times(rate / rawRate)];
    }),
    targets: [{ text: `payhooks ≥ 0.9x the raw loop: ${times(payhooksRate / rawRate)}`, met: payhooksRate / rawRate >= 0.9 }],
  };
}
