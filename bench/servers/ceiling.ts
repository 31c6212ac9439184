// The no-storage ceiling of issue 27: node:http, the default scheme's HMAC over the raw body compared in constant time,
// JSON.parse, 200. Nothing is stored, so no receiver that stores can be faster on this machine: serve is measured
// against it, loaded exactly the same way.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.env.PAYHOOKS_WEBHOOK_SECRET!;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('error', () => res.destroy());
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const timestamp = String(req.headers['x-webhook-timestamp'] ?? '');
    const given = Buffer.from(String(req.headers['x-webhook-signature'] ?? '').replace(/^v1=/, ''), 'hex');
    const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(raw).digest();
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad signature"}');
      return;
    }
    let event: { eventId?: unknown };
    try {
      event = JSON.parse(raw.toString('utf8')) as { eventId?: unknown };
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"not JSON"}');
      return;
    }
    if (typeof event.eventId !== 'string') {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"no eventId"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
