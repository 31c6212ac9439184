import type { HandlerRunObservation } from '../worker/worker.js';
import type { WorkerEvents } from '../worker/worker-events.js';

/**
 * What a worker child of `serve` sends its parent over their IPC channel: the handler runs and dead events since the
 * last report, so that serve's own /metrics shows `payhooks_handler_duration_seconds`, `payhooks_handler_failures_total`
 * and `payhooks_events_dead_total` for the handlers, the mirror and the sinks that run in the child.
 */
export interface WorkerReport {
  payhooks: 'worker-report';
  runs: HandlerRunObservation[];
  /** The types of the events the child recorded dead since the last report (`payhooks_events_dead_total`). */
  dead: string[];
}

/** How often a child sends what it gathered: one message per interval, not one per run (a drain runs thousands a second). */
const REPORT_INTERVAL_MS = 250;

/** Whether an IPC message is a {@link WorkerReport} (the channel also carries a TypeScript loader's messages). */
export function isWorkerReport(message: unknown): message is WorkerReport {
  const report = message as Partial<WorkerReport> | null;
  return (
    typeof report === 'object' &&
    report !== null &&
    report.payhooks === 'worker-report' &&
    Array.isArray(report.runs) &&
    Array.isArray(report.dead)
  );
}

/**
 * Sends a report over this process's IPC channel. A closed channel (the parent is gone) drops it: Node would report
 * that as an 'error' event of `process`, which unheard stops the process.
 */
function sendToParent(report: WorkerReport): void {
  if (process.connected) process.send?.(report, undefined, undefined, () => undefined);
}

/**
 * In a worker child: gathers the handler runs (`run:ended`) and dead events (`event:dead`) its worker tells, and sends them to the parent every
 * 250 ms; `stop()` sends what is left. A report the channel cannot take (the parent is gone) is dropped.
 *
 * @example
 * const reports = reportRunsToParent(hooks.events);
 * // … when stopping:
 * reports.stop();
 */
export function reportRunsToParent(events: WorkerEvents, send: (report: WorkerReport) => void = sendToParent): { stop(): void } {
  let runs: HandlerRunObservation[] = [];
  let dead: string[] = [];
  const flush = () => {
    if (runs.length === 0 && dead.length === 0) return;
    const report: WorkerReport = { payhooks: 'worker-report', runs, dead };
    runs = [];
    dead = [];
    send(report);
  };
  const unsubscribe = [
    events.on('run:ended', ({ account, handler, eventType, failed, seconds }) => {
      runs.push({ account, handler, eventType, failed, seconds });
    }),
    events.on('event:dead', ({ eventType }) => {
      dead.push(eventType);
    }),
  ];
  const timer = setInterval(flush, REPORT_INTERVAL_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      for (const off of unsubscribe) off();
      flush();
    },
  };
}
