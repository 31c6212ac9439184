import { readFileSync } from 'node:fs';
import type { JsonResponse } from '../internal/error-response.js';

// The page is three static files in assets/ next to this module (the build copies them to dist/console/assets/): no
// build step at install, nothing fetched from elsewhere at run time. They hold no data; what they show comes
// from /admin/api/ with the token.
const FILES: Record<string, { file: string; type: string }> = {
  '/admin': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/admin/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/admin/console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  '/admin/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
  // The issues view, a module of its own (issues.js builds its section into the page).
  '/admin/issues.js': { file: 'issues.js', type: 'text/javascript; charset=utf-8' },
  '/admin/issues.css': { file: 'issues.css', type: 'text/css; charset=utf-8' },
};

// Only this origin's own files and API; no frames, so the page cannot be overlaid by another site.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const cache = new Map<string, string>();

/** The console page's file at `path` (`/admin`, `/admin/console.js`, …), or undefined when it is not one. */
export function consoleAsset(path: string): JsonResponse | undefined {
  const entry = FILES[path];
  if (!entry) return undefined;
  let body = cache.get(entry.file);
  if (body === undefined) {
    body = readFileSync(new URL(`./assets/${entry.file}`, import.meta.url), 'utf8');
    cache.set(entry.file, body);
  }
  return {
    status: 200,
    headers: {
      'content-type': entry.type,
      'content-security-policy': CONTENT_SECURITY_POLICY,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
    },
    body,
  };
}
