// The receiving side of serve's HTTP forward: a stand-in for an ERP's inbound endpoint, which is itself a
// payhooks. Each forwarded document is signed with the target's own secret (not the service's), and its
// eventId, eventType and data form a valid delivery, so the same receiver that checks the service's webhooks
// checks these: an unsigned or tampered POST is refused, and a document sent again (serve retries until it gets
// a 2xx) is stored and handled once.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, createPayhooks, type ForwardDocument, getEvent } from 'payhooks';

export interface ErpInboxOptions {
  /** The forward target's secret: `secret` of the `forward` entry in payhooks.config.mjs. */
  secret: string;
  /** 0: any free port. */
  port: number;
  host?: string | undefined;
  /** Called once per verified document, whatever the number of deliveries. */
  onDocument: (document: ForwardDocument) => void | Promise<void>;
}

export interface ErpInbox {
  /** Where serve forwards to, e.g. `http://127.0.0.1:8788/inbound`. */
  url: string;
  close(): Promise<void>;
}

export async function startErpInbox(options: ErpInboxOptions): Promise<ErpInbox> {
  const hooks = createPayhooks({
    secret: options.secret,
    // Its own inbox, apart from serve's: in memory, since this stand-in books nothing that must outlive it.
    database: { dataDir: 'memory://' },
    logger: createLogger({ level: process.env.PAYHOOKS_LOG_LEVEL || 'warn' }, process.stderr),
    worker: { pollIntervalMs: 200 },
  });
  const store = await hooks.ready();
  hooks.onAny(
    async (event) => {
      // A handler gets the envelope (eventId, eventType, data); the rest of the document, the resource's current
      // state as serve read it, is in the stored body, exactly as it was signed.
      const stored = await getEvent(store, event.eventId);
      if (!stored) throw new Error(`event ${event.eventId} is being handled but is not stored`);
      await options.onDocument(JSON.parse(stored.rawBody) as ForwardDocument);
    },
    { name: 'erp-import' },
  );
  await hooks.start();

  const handle = hooks.node();
  const server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/inbound') void handle(req, res);
    else res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"POST /inbound"}}');
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/inbound`,
    async close() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await hooks.stop();
    },
  };
}
