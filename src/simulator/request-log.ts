// The simulator's record of which API key touched which resource, so that a test can prove that no organization's
// key read or changed another organization's data. Kept in memory, exposed by `Simulator.requestLog()`, never
// written to the pino log (it holds keys).

/** One REST call answered to a known key. */
export interface RequestLogEntry {
  /** When it was answered (ISO 8601). */
  at: string;
  /** The organization the key belongs to. */
  account: string;
  /** The key that was sent (this process only: never logged). */
  apiKey: string;
  method: string;
  /** The path without its query. */
  path: string;
  operationId: string;
  status: number;
  /**
   * The ids the call named (path parameters and the `…Id` fields of its `input`) and, for a 2xx JSON answer, those
   * it answered with: the top-level `id` and `…Id` fields of the answer, or of each element of a list's `data`.
   */
  resourceIds: string[];
}

/** The most entries kept; past it the oldest tenth is dropped (a simulator left running for days stays bounded). */
export const REQUEST_LOG_LIMIT = 100_000;

/** The request log: entries in the order their answers were written. */
export class RequestLog {
  readonly #entries: RequestLogEntry[] = [];
  #dropped = 0;

  /** Adds one entry. */
  record(entry: RequestLogEntry): void {
    this.#entries.push(entry);
    if (this.#entries.length > REQUEST_LOG_LIMIT) {
      const drop = Math.ceil(REQUEST_LOG_LIMIT / 10);
      this.#entries.splice(0, drop);
      this.#dropped += drop;
    }
  }

  /** A copy of the entries kept, oldest first. */
  entries(): RequestLogEntry[] {
    return this.#entries.map((entry) => ({ ...entry, resourceIds: [...entry.resourceIds] }));
  }

  /** How many of the oldest entries were dropped to stay within {@link REQUEST_LOG_LIMIT}. */
  get dropped(): number {
    return this.#dropped;
  }
}

/** The ids a call named and answered with (see {@link RequestLogEntry.resourceIds}), each once, in order. */
export function resourceIdsOf(
  request: { params: Record<string, string>; rawBody: string },
  answer: { status: number; body: string; contentType?: string | undefined },
): string[] {
  const ids = new Set(Object.values(request.params));
  const body = parseJson(request.rawBody);
  if (isObject(body) && isObject(body.input)) for (const id of topLevelIds(body.input)) ids.add(id);
  if (answer.status >= 200 && answer.status < 300 && (answer.contentType === undefined || answer.contentType.includes('json'))) {
    const answered = parseJson(answer.body);
    const items = isObject(answered) && Array.isArray(answered.data) ? answered.data : [answered];
    for (const item of items) if (isObject(item)) for (const id of topLevelIds(item)) ids.add(id);
  }
  return [...ids];
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function topLevelIds(value: Record<string, unknown>): string[] {
  return Object.entries(value)
    .filter(([key, id]) => (key === 'id' || key.endsWith('Id')) && typeof id === 'string')
    .map(([, id]) => id as string);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
