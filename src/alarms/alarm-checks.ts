// The alarms of `serve` (docs/alerts.md): a pure function from what was observed to a status per check. Gathering
// the inputs (the receiver's deliveries, the database, the service's API) is the runner's job
// (src/service/alarm-monitor.ts); /metrics, GET /admin/api/health and the console read its result.
//
// A check is one entry of ALARM_CHECKS: a name, what it watches, and an evaluation of the inputs. A new check (the
// effects waiting for review, say) is a new input field, gathered by the runner, and one more entry here.

import type { PendingResource } from '../store/health-readings.js';

/** What a check says: firing, ok, or unknown (its input could not be read, or is not available in this process). */
export type AlarmStatus = 'ok' | 'firing' | 'unknown';

/** The thresholds of the checks (`alarms` of the service configuration; defaults in `ALARM_DEFAULTS`). */
export interface AlarmThresholds {
  /** Sender silence: no authentic delivery for longer than `afterMs` while the API shows activity. */
  silence: {
    afterMs: number;
    /** Activity younger than this is not yet owed a delivery (the sender's first try takes a moment). */
    graceMs: number;
  };
  /** Signature failures: the last `minFailures` deliveries (or more) were refused for their signature, within `windowMs`. */
  signature: { minFailures: number; windowMs: number };
  /** The sender's view: at least `minFailed` deliveries whose latest try failed, within `windowMs`. */
  sender: { minFailed: number; windowMs: number };
  /** Backlog: the oldest pending event older than `maxAgeMs`. */
  backlog: { maxAgeMs: number };
  /** Dead events: any event that ended dead within `windowMs`. */
  dead: { windowMs: number };
}

/** The sender's view of this endpoint, from `GET /v1/webhooks` and `GET /v1/webhook-events`. */
export interface SenderView {
  /** When this was read. */
  readAt: Date;
  /** The endpoint's state as the service reports it (a `status`, `state` or `enabled` field), null when it reports none. */
  endpointState: string | null;
  /** Whether that state says the service stopped delivering (disabled, paused, failing…). */
  endpointDisabled: boolean;
  /** Delivery records created within the sender window whose latest try failed (no answer, or not 2xx). */
  failedDeliveries: number;
  /** The newest of them, for the operator to look up. */
  failedExamples: { eventId: string; eventType: string; status: number | null; at: string }[];
}

/** What the API shows happened (invoices created, paid or canceled, delivery records made) in a span of time. */
export interface ApiActivity {
  readAt: Date;
  /** The span looked at. */
  from: Date;
  to: Date;
  /** Changes within it. */
  changes: number;
  /** A few of them, to name in the message (`invoice inv_1 paid at …`). */
  examples: string[];
}

/** A summary of the gap sweeper's newest run, as the checks need it. */
export interface SweepSummary {
  finishedAt: Date;
  outcome: 'clean' | 'found' | 'failed';
  /** Mirror rows that drifted and were not repaired. */
  unrepairedDrift: number;
  /** Events the inbox never stored and the service would not send again. */
  unrecoveredEvents: number;
  error: string | null;
}

/** Everything the checks look at; `undefined` means "not known here" (the check answers unknown). */
export interface AlarmInputs {
  now: Date;
  /** When this process started watching (silence is never counted from before it). */
  watchingSince: Date;
  /** Whether this process receives deliveries (`--role worker` does not: the receiver's checks are unknown). */
  receiving: boolean;
  /** The newest authentic delivery this process saw (stored or duplicate), or null. */
  lastAuthenticAt: Date | null;
  /** Signature refusals since the last authentic delivery, and when the latest came. */
  signatureFailuresInARow: number;
  lastSignatureFailureAt: Date | null;
  /** From the database; undefined when it did not answer. */
  newestReceivedAt?: Date | null | undefined;
  oldestPendingAgeMs?: number | undefined;
  /** The oldest pending event's resource and its queued events (it included); null or undefined: none, or not known. */
  oldestPendingResource?: PendingResource | null | undefined;
  recentlyDead?: number | undefined;
  quarantined?: number | undefined;
  /** From the API; undefined without an API key or when it did not answer. */
  activity?: ApiActivity | undefined;
  sender?: SenderView | undefined;
  /** The sweeper's newest run; null: none recorded yet; undefined: the database did not answer. */
  sweep?: SweepSummary | null | undefined;
  /** Issues open now (new or reopened, not acknowledged) and the newest of them; undefined: the database did not answer. */
  openIssues?: OpenIssues | undefined;
}

/** The open issues, as the `open_issues` check needs them (store/issues.ts). */
export interface OpenIssues {
  count: number;
  /** The most recently failing one, described (`handler ledger: RangeError on INVOICE_PAID, 500 events`), or null. */
  newest: string | null;
}

/** One check's result. */
export interface AlarmResult {
  name: AlarmName;
  status: AlarmStatus;
  /** What it saw, in a sentence an operator can act on (no secrets, no personal data). */
  message: string;
  /** The measured value the threshold applies to (seconds, a count), null when unknown. */
  value: number | null;
  /** The section of docs/troubleshooting.md that says what to do. */
  runbook: string;
}

/** One check: its name, what it watches, and its evaluation. */
export interface AlarmCheck {
  name: AlarmName;
  /** What it watches, for the console and the docs. */
  summary: string;
  /** The heading of docs/troubleshooting.md that says what to check and which command fixes it. */
  runbook: string;
  evaluate(inputs: AlarmInputs, thresholds: AlarmThresholds): Omit<AlarmResult, 'name' | 'runbook'>;
}

/** The names of the checks, as they appear in `payhooks_alarm_firing{alarm=…}` and in the health report. */
export const ALARM_NAMES = [
  'sender_silence',
  'signature_failures',
  'sender_failures',
  'backlog_age',
  'dead_events',
  'quarantined_deliveries',
  'mirror_drift',
  'open_issues',
] as const;
export type AlarmName = (typeof ALARM_NAMES)[number];

const seconds = (ms: number) => Math.round(ms / 1000);
const unknown = (message: string) => ({ status: 'unknown' as const, message, value: null });
const latest = (...dates: (Date | null | undefined)[]): Date | null =>
  dates.reduce<Date | null>((max, date) => (date && (!max || date > max) ? date : max), null);

/**
 * Names the resource the oldest pending event waits with, when others of it are queued: they run one at a time, in
 * order, so a backlog held by one resource is drained by one slot, not the worker (or waits for an earlier retry).
 */
function behindItsResource(resource: PendingResource | null | undefined): string {
  if (!resource || resource.queued < 2) return '';
  return (
    ` It is one of ${resource.queued} queued events of ${resource.key}, which run one at a time and in order` +
    ' (one busy resource, or an earlier event of it waiting for a retry: docs/storage.md#upkeep-of-the-queue).'
  );
}

/** Each check, in the order they are shown. One more alarm is one more entry (and the input it reads). */
export const ALARM_CHECKS: readonly AlarmCheck[] = [
  {
    name: 'sender_silence',
    summary: 'No authentic delivery for longer than alarms.silence.afterMs while the API shows activity.',
    runbook: 'sender-silence',
    evaluate(inputs, { silence }) {
      // Any receiver on this database storing events counts as a delivery (several replicas behind a balancer).
      const heard = latest(inputs.lastAuthenticAt, inputs.newestReceivedAt, inputs.watchingSince)!;
      const quietMs = Math.max(0, inputs.now.getTime() - heard.getTime());
      if (quietMs <= silence.afterMs)
        return { status: 'ok', message: `The last authentic delivery came ${seconds(quietMs)} s ago.`, value: seconds(quietMs) };
      if (!inputs.activity) {
        return {
          status: 'unknown',
          message: `No authentic delivery for ${seconds(quietMs)} s, and the API could not be asked whether anything happened meanwhile (no PAYHOOKS_API_KEY, or it did not answer).`,
          value: seconds(quietMs),
        };
      }
      if (inputs.activity.changes === 0) {
        return {
          status: 'ok',
          message: `No authentic delivery for ${seconds(quietMs)} s, and the API shows no activity since: a quiet time.`,
          value: seconds(quietMs),
        };
      }
      return {
        status: 'firing',
        message:
          `No authentic delivery for ${seconds(quietMs)} s while the API shows ${inputs.activity.changes} change(s) since the last one ` +
          `(${inputs.activity.examples.join('; ')}): the sender is not delivering to this endpoint.`,
        value: seconds(quietMs),
      };
    },
  },
  {
    name: 'signature_failures',
    summary: 'The most recent deliveries were refused for their signature (the secret out of step with the sender).',
    runbook: 'signature-failures',
    evaluate(inputs, { signature }) {
      if (!inputs.receiving) return unknown('This process does not receive deliveries (--role worker).');
      const inARow = inputs.signatureFailuresInARow;
      const last = inputs.lastSignatureFailureAt;
      const recent = last !== null && inputs.now.getTime() - last.getTime() <= signature.windowMs;
      if (inARow >= signature.minFailures && recent) {
        return {
          status: 'firing',
          message: `The last ${inARow} deliveries were refused for their signature, the latest ${seconds(inputs.now.getTime() - last.getTime())} s ago, with no authentic delivery since: PAYHOOKS_WEBHOOK_SECRET is likely out of step with the endpoint's secret.`,
          value: inARow,
        };
      }
      return {
        status: 'ok',
        message: inARow === 0 ? 'The latest delivery was authentic.' : `${inARow} signature refusal(s) since the last authentic delivery.`,
        value: inARow,
      };
    },
  },
  {
    name: 'sender_failures',
    summary: "The service's own delivery history shows failed deliveries to this endpoint, or the endpoint disabled.",
    runbook: 'sender-failures',
    evaluate(inputs, { sender }) {
      const view = inputs.sender;
      if (!view) return unknown("The service's delivery history could not be read (no PAYHOOKS_API_KEY, or it did not answer).");
      if (view.endpointDisabled) {
        return {
          status: 'firing',
          message: `The service reports the webhook endpoint as ${view.endpointState}: it is not delivering.`,
          value: view.failedDeliveries,
        };
      }
      const examples = view.failedExamples
        .map((e) => `${e.eventId} (${e.eventType}) answered ${e.status ?? 'nothing'} at ${e.at}`)
        .join('; ');
      if (view.failedDeliveries >= sender.minFailed) {
        return {
          status: 'firing',
          message: `The service reports ${view.failedDeliveries} failed deliveries to this endpoint within ${seconds(sender.windowMs)} s: ${examples}.`,
          value: view.failedDeliveries,
        };
      }
      return {
        status: 'ok',
        message: `The service reports ${view.failedDeliveries} failed deliveries within ${seconds(sender.windowMs)} s${view.endpointState ? `; the endpoint is ${view.endpointState}` : ''}.`,
        value: view.failedDeliveries,
      };
    },
  },
  {
    name: 'backlog_age',
    summary: 'The oldest pending event waited longer than alarms.backlog.maxAgeMs.',
    runbook: 'backlog-age',
    evaluate(inputs, { backlog }) {
      const age = inputs.oldestPendingAgeMs;
      if (age === undefined) return unknown('The database did not answer.');
      return age > backlog.maxAgeMs
        ? {
            status: 'firing',
            message: `The oldest pending event has waited ${seconds(age)} s (over ${seconds(backlog.maxAgeMs)} s): the worker is behind or stopped.${behindItsResource(inputs.oldestPendingResource)}`,
            value: seconds(age),
          }
        : {
            status: 'ok',
            message: age === 0 ? 'No event is waiting.' : `The oldest pending event has waited ${seconds(age)} s.`,
            value: seconds(age),
          };
    },
  },
  {
    name: 'dead_events',
    summary: 'Events ended dead (a handler gave up) within alarms.dead.windowMs.',
    runbook: 'dead-events',
    evaluate(inputs, { dead }) {
      const count = inputs.recentlyDead;
      if (count === undefined) return unknown('The database did not answer.');
      return count > 0
        ? { status: 'firing', message: `${count} event(s) ended dead within ${seconds(dead.windowMs)} s.`, value: count }
        : { status: 'ok', message: `No event ended dead within ${seconds(dead.windowMs)} s.`, value: 0 };
    },
  },
  {
    name: 'quarantined_deliveries',
    summary: 'Authentic deliveries that could not be stored are held in quarantine, waiting for an operator.',
    runbook: 'quarantined-deliveries',
    evaluate(inputs) {
      const count = inputs.quarantined;
      if (count === undefined) return unknown('The database did not answer.');
      return count > 0
        ? { status: 'firing', message: `${count} authentic delivery(ies) held in quarantine.`, value: count }
        : { status: 'ok', message: 'Nothing is held in quarantine.', value: 0 };
    },
  },
  {
    name: 'mirror_drift',
    summary: "The gap sweeper's last run found mirror rows it could not repair, or events the service would not send again.",
    runbook: 'mirror-drift',
    evaluate(inputs) {
      const sweep = inputs.sweep;
      if (sweep === undefined) return unknown('The database did not answer.');
      if (sweep === null) return unknown('The gap sweeper has not recorded a run yet.');
      const left = sweep.unrepairedDrift + sweep.unrecoveredEvents;
      if (left > 0) {
        return {
          status: 'firing',
          message: `The sweeper's run of ${sweep.finishedAt.toISOString()} left ${sweep.unrepairedDrift} drifted mirror row(s) unrepaired and ${sweep.unrecoveredEvents} missing event(s) unrecovered.`,
          value: left,
        };
      }
      return {
        status: 'ok',
        message:
          sweep.outcome === 'failed'
            ? `The sweeper's run of ${sweep.finishedAt.toISOString()} failed (${sweep.error ?? 'no reason'}); nothing it checked was left drifted.`
            : `The sweeper's run of ${sweep.finishedAt.toISOString()} left nothing drifted or missing.`,
        value: 0,
      };
    },
  },
  {
    name: 'open_issues',
    summary: 'Failures grouped into an issue that is open: new, or reopened after it was resolved, and not acknowledged.',
    runbook: 'open-issues',
    evaluate(inputs) {
      const open = inputs.openIssues;
      if (open === undefined) return unknown('The database did not answer.');
      return open.count > 0
        ? {
            status: 'firing',
            message: `${open.count} issue(s) open, the most recent: ${open.newest ?? 'unknown'}. Acknowledge, fix and replay them in the console or with payhooks issues.`,
            value: open.count,
          }
        : { status: 'ok', message: 'No issue is open.', value: 0 };
    },
  },
];

/** The result of every check, and the overall status: firing when any fires, else unknown when any is, else ok. */
export interface AlarmReport {
  status: AlarmStatus;
  evaluatedAt: Date;
  checks: AlarmResult[];
}

/**
 * Evaluates each check against the inputs. Pure: the same inputs give the same report.
 *
 * @example
 * const report = evaluateAlarms(inputs, ALARM_DEFAULTS);
 * report.checks.find((check) => check.name === 'signature_failures')?.status; // 'firing'
 */
export function evaluateAlarms(
  inputs: AlarmInputs,
  thresholds: AlarmThresholds,
  checks: readonly AlarmCheck[] = ALARM_CHECKS,
): AlarmReport {
  const results = checks.map((check) => ({ name: check.name, runbook: check.runbook, ...check.evaluate(inputs, thresholds) }));
  const status = results.some((r) => r.status === 'firing') ? 'firing' : results.some((r) => r.status === 'unknown') ? 'unknown' : 'ok';
  return { status, evaluatedAt: inputs.now, checks: results };
}
