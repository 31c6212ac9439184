import { WebhookVerificationError } from './errors.js';

const FIX =
  'Give the webhook middleware the raw request bytes: mount it before any body parser (e.g. above app.use(express.json())), ' +
  'exclude the webhook path from the parser, or use express.raw({ type: "application/json" }) on that route.';

/** Cross-realm safe (a Buffer made in another vm context is not `instanceof` this realm's Uint8Array). */
function isUint8Array(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array || (ArrayBuffer.isView(value) && Object.prototype.toString.call(value) === '[object Uint8Array]');
}

/**
 * Throws `body_already_parsed` unless `body` is raw bytes (a `Uint8Array`, which includes `Buffer`).
 *
 * The signature covers the exact bytes on the wire. Once a body parser has turned them into an object or a string,
 * they cannot be recovered (key order, whitespace and escapes are lost), so verification would fail with a
 * misleading "no matching signature"; this says what actually went wrong.
 *
 * @example
 * assertRawBody(req.body); // throws: "…reached the verifier as a parsed object…" after express.json()
 */
export function assertRawBody(body: unknown): asserts body is Uint8Array {
  if (isUint8Array(body)) return;
  throw new WebhookVerificationError(
    'body_already_parsed',
    `The webhook body reached the verifier ${describe(body)}, not as raw bytes. ${FIX}`,
  );
}

function describe(body: unknown): string {
  if (body === undefined || body === null)
    return `as ${String(body)} (nothing read the request body, or a body parser consumed the stream and left nothing usable)`;
  if (typeof body === 'string')
    return 'as a string: a text body parser or some code decoded the bytes, and decoding does not guarantee the signed bytes back';
  if (body instanceof ArrayBuffer) return 'as an ArrayBuffer (wrap it: new Uint8Array(arrayBuffer))';
  if (ArrayBuffer.isView(body)) return `as a ${body.constructor.name} (pass a Uint8Array or Buffer over the same bytes)`;
  if (typeof body === 'object')
    return "as a parsed object: a JSON body parser (express.json(), bodyParser.json(), a framework's automatic parsing) ran first";
  return `as a ${typeof body}`;
}
