import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';

/** How one POST ended. `status` is null when no answer came (refused, reset, timed out, aborted). */
export interface PostOutcome {
  status: number | null;
  /** Null for a 2xx; else what went wrong, with the start of the receiver's answer when there was one. */
  error: string | null;
  /** The start of the answer's body (at most {@link MAX_KEPT_BODY_CHARS} characters). */
  body: string;
  durationMs: number;
}

/** What {@link postDelivery} sends. */
export interface PostRequest {
  url: string;
  headers: Record<string, string>;
  /** Sent byte for byte (a string as UTF-8). */
  body: string | Uint8Array;
  timeoutMs: number;
  /** Aborts the request (the simulator is closing). */
  signal: AbortSignal;
  agents: { http: http.Agent; https: https.Agent };
}

const ERROR_SNIPPET_CHARS = 200;
/** How much of an answer's body is kept. */
export const MAX_KEPT_BODY_CHARS = 64 * 1024;

/**
 * POSTs one delivery and reports how it ended; never throws. The whole exchange (connect, headers, body) must
 * finish within `timeoutMs`, as the spec's "answer 2xx within 10 seconds" requires.
 */
export function postDelivery(request: PostRequest): Promise<PostOutcome> {
  const started = performance.now();
  const target = new URL(request.url);
  const isHttps = target.protocol === 'https:';
  if (request.signal.aborted) return Promise.resolve({ status: null, error: 'the simulator closed', body: '', durationMs: 0 });
  return new Promise((resolve) => {
    let settled = false;
    let text = '';
    const finish = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      resolve({ status, error, body: text, durationMs: Math.round(performance.now() - started) });
    };
    const options = {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      agent: isHttps ? request.agents.https : request.agents.http,
    };
    const req = (isHttps ? https : http).request(target, options, (res) => {
      const status = res.statusCode ?? null;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (text.length < MAX_KEPT_BODY_CHARS) text += chunk.slice(0, MAX_KEPT_BODY_CHARS - text.length);
      });
      res.on('end', () => {
        const ok = status !== null && status >= 200 && status < 300;
        finish(status, ok ? null : `HTTP ${status}${text ? `: ${text.slice(0, ERROR_SNIPPET_CHARS)}` : ''}`);
      });
      res.on('error', (err) => finish(null, err.message));
    });
    const timer = setTimeout(() => {
      finish(null, `no answer within ${request.timeoutMs} ms`);
      req.destroy();
    }, request.timeoutMs);
    const onAbort = () => {
      finish(null, 'the simulator closed');
      req.destroy();
    };
    request.signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err: NodeJS.ErrnoException) => finish(null, err.message || err.code || 'connection error'));
    req.end(request.body);
  });
}
