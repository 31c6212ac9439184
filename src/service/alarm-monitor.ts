import type { Logger } from 'pino';
import { type AlarmThresholds, type ApiActivity, evaluateAlarms, type SenderView } from '../alarms/alarm-checks.js';
import type { DeliveryWatch } from '../alarms/delivery-watch.js';
import { type HealthReport, sweepSummaryOf } from '../alarms/health-report.js';
import type { ApiClient, ApiInvoice, WebhookEndpoint, WebhookEventRecord } from '../client/index.js';
import { timerDelay } from '../internal/duration.js';
import type { PayhooksDatabase } from '../store/database.js';
import { readHealthReadings } from '../store/health-readings.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import { lastSweeperRun, lastSweeperRuns } from '../store/sweeper-runs.js';

// The thin periodic runner of the alarms: every `evaluateEveryMs` it reads the database, takes the receiver's
// watch and the latest API probe, and evaluates the pure checks of src/alarms/. The API is probed on its own,
// slower clock in the background, so a slow API (or an empty rate budget) never holds up an evaluation.

/** Options of {@link startAlarmMonitor}. */
export interface AlarmMonitorOptions {
  store: PayhooksDatabase;
  /** The receiver's deliveries, as this process answered them. */
  watch: DeliveryWatch;
  /** Whether this process receives (a `--role worker` process has no deliveries and probes no API). */
  receiving: boolean;
  /** The API client on the shared rate budget; undefined: the API's checks are unknown. */
  api: Pick<ApiClient, 'invoices' | 'webhooks' | 'webhookEvents'> | undefined;
  /** The service's accounts, whose newest sweeps the mirror-drift check reads, one each. Default the default account. */
  accounts?: readonly string[] | undefined;
  /** The endpoint whose deliveries count (reconcile.endpointId); default: the only one the service lists. */
  endpointId?: string | undefined;
  thresholds: AlarmThresholds & { evaluateEveryMs: number; apiProbeEveryMs: number };
  logger: Logger;
}

/** The running monitor: the one place /metrics, the admin API and the console read the alarms from. */
export interface AlarmMonitor {
  /** The latest evaluation (waits for the first one after start). */
  health(): Promise<HealthReport>;
  /** Evaluates now (a probe due is started, not awaited) and returns the result. */
  evaluate(): Promise<HealthReport>;
  stop(): Promise<void>;
}

/**
 * The newest sweep of each account (`perAccount`), the newest of all, and the runs the mirror-drift check reads:
 * each account's newest, or before runs named their account (migrations/023) the newest of any.
 */
async function newestSweeps(store: PayhooksDatabase, accounts: readonly string[]) {
  const perAccount = await lastSweeperRuns(store, accounts);
  const newest = perAccount[0] ?? (await lastSweeperRun(store)) ?? null;
  return { perAccount, newest, runs: perAccount.length ? perAccount : newest ? [newest] : [] };
}

/** The newest records of a list that pages oldest first: the total from a one-record page, then the last page. */
async function newestPage<T>(list: (page: { take: number; skip?: number }) => Promise<{ data: T[]; total?: number | null | undefined }>) {
  const head = await list({ take: 1 });
  const total = head.total ?? null;
  if (total === null) return (await list({ take: 100 })).data;
  if (total <= 1) return head.data;
  return (await list({ take: 100, skip: Math.max(0, total - 100) })).data;
}

const time = (value: string | null | undefined) => (value ? Date.parse(value) : Number.NaN);
const within = (at: number, from: number, to: number) => Number.isFinite(at) && at > from && at <= to;

/** The latest try of a record: the one with the highest number. */
function latestAttempt(record: WebhookEventRecord) {
  return record.attempts.reduce<(typeof record.attempts)[number] | undefined>(
    (latest, attempt) => (!latest || attempt.attemptNumber > latest.attemptNumber ? attempt : latest),
    undefined,
  );
}

const DISABLED = /disabled|paused|inactive|suspended|failing|off/i;

/** The endpoint's state as the service reports it, if it reports one (the spec shows none; this reads the usual fields). */
function endpointStateOf(endpoint: WebhookEndpoint | undefined): { state: string | null; disabled: boolean } {
  if (!endpoint) return { state: null, disabled: false };
  const fields = endpoint as Record<string, unknown>;
  for (const key of ['status', 'state']) {
    const value = fields[key];
    if (typeof value === 'string') return { state: value, disabled: DISABLED.test(value) };
  }
  if (fields.enabled === false || fields.disabled === true || fields.active === false) return { state: 'disabled', disabled: true };
  return { state: null, disabled: false };
}

/** Changes of invoices in (from, to]: created, paid (a payment) or canceled. */
function invoiceChanges(invoices: readonly ApiInvoice[], from: number, to: number): string[] {
  const changes: string[] = [];
  for (const invoice of invoices) {
    const stamps: [string, string | null | undefined][] = [
      ['created', invoice.createdAt],
      ['paid', invoice.paidAt],
      ['canceled', invoice.canceledAt],
    ];
    for (const [what, at] of stamps) if (within(time(at), from, to)) changes.push(`invoice ${invoice.id} ${what} at ${at}`);
  }
  return changes;
}

/**
 * Starts evaluating the alarms every `thresholds.evaluateEveryMs`, the first evaluation at once. Never throws
 * from its timer: a database that does not answer makes its checks unknown, an API that does not answer leaves
 * the last probe's values (and its checks unknown until one succeeds).
 *
 * @example
 * const monitor = startAlarmMonitor({ store, watch, receiving: true, api, thresholds: config.alarms, logger });
 * (await monitor.health()).checks; // [{ name: 'sender_silence', status: 'ok', … }, …]
 */
export function startAlarmMonitor(options: AlarmMonitorOptions): AlarmMonitor {
  const { store, watch, thresholds, logger } = options;
  const watchingSince = new Date();
  const api = options.receiving ? options.api : undefined;
  let sender: SenderView | undefined;
  let activity: ApiActivity | undefined;
  let probing: Promise<void> | undefined;
  let lastProbeAt = 0;
  let heardAt = watchingSince;
  const controller = new AbortController();
  const signal = controller.signal;

  const probeSender = async (now: Date): Promise<{ view: SenderView; recordTimes: number[] }> => {
    const endpoints = await api!.webhooks.list({ take: 100 }, { signal });
    const endpoint = options.endpointId
      ? endpoints.data.find((e) => e.id === options.endpointId)
      : endpoints.data.length === 1
        ? endpoints.data[0]
        : undefined;
    const records = await newestPage((page) =>
      api!.webhookEvents.list({ ...page, ...(options.endpointId ? { endpointId: options.endpointId } : {}) }, { signal }),
    );
    const from = now.getTime() - thresholds.sender.windowMs;
    const failed = records
      .filter((record) => !options.endpointId || record.endpointId === options.endpointId)
      .map((record) => ({ record, attempt: latestAttempt(record) }))
      .filter(({ record, attempt }) => {
        const answered = attempt?.responseStatus;
        const ok = answered !== null && answered !== undefined && answered >= 200 && answered < 300;
        if (attempt) return !ok && within(time(attempt.attemptedAt), from, now.getTime());
        return record.status === 'failed' && within(time(record.createdAt), from, now.getTime());
      });
    const { state, disabled } = endpointStateOf(endpoint);
    const view: SenderView = {
      readAt: now,
      endpointState: state,
      endpointDisabled: disabled,
      failedDeliveries: failed.length,
      failedExamples: failed.slice(-3).map(({ record, attempt }) => ({
        eventId: record.eventId,
        eventType: record.eventType,
        status: attempt?.responseStatus ?? null,
        at: attempt?.attemptedAt ?? record.createdAt,
      })),
    };
    // The delivery records made while quiet are activity too: the sender knows it has events to send.
    return { view, recordTimes: records.map((record) => time(record.createdAt)) };
  };

  const probeActivity = async (now: Date, recordTimes: number[]): Promise<ApiActivity> => {
    const from = heardAt.getTime();
    const to = now.getTime() - thresholds.silence.graceMs;
    const invoices = await newestPage((page) => api!.invoices.list(page, { signal }));
    const changes = invoiceChanges(invoices, from, to);
    const records = recordTimes.filter((at) => within(at, from, to)).length;
    if (records > 0) changes.push(`${records} delivery record(s) the service made for this endpoint`);
    return { readAt: now, from: new Date(from), to: new Date(Math.max(from, to)), changes: changes.length, examples: changes.slice(0, 3) };
  };

  const probe = async () => {
    const now = new Date();
    try {
      const { view, recordTimes } = await probeSender(now);
      sender = view;
      // Only worth asking while quiet: otherwise the silence check does not look at it.
      const quiet = now.getTime() - heardAt.getTime() > thresholds.silence.afterMs;
      activity = quiet ? await probeActivity(now, recordTimes) : undefined;
    } catch (err) {
      if (signal.aborted) return;
      // Stale values would hide a change: the API's checks go unknown until a probe succeeds again.
      sender = undefined;
      activity = undefined;
      logger.warn({ err }, "alarms: the service's API could not be probed; its checks are unknown until it answers");
    }
  };

  const evaluate = async (): Promise<HealthReport> => {
    const now = new Date();
    const [readings, sweep] = await Promise.all([
      readHealthReadings(store, { deadWithinMs: thresholds.dead.windowMs }).catch(() => undefined),
      newestSweeps(store, options.accounts ?? [DEFAULT_ACCOUNT]).catch(() => undefined),
    ]);
    const newest = readings?.newestReceivedAt ?? null;
    for (const at of [watch.lastAuthenticAt, newest]) if (at && at > heardAt) heardAt = at;
    if (api && !probing && now.getTime() - lastProbeAt >= thresholds.apiProbeEveryMs) {
      lastProbeAt = now.getTime();
      probing = probe().finally(() => {
        probing = undefined;
      });
    }
    const report = evaluateAlarms(
      {
        now,
        watchingSince,
        receiving: options.receiving,
        lastAuthenticAt: watch.lastAuthenticAt,
        signatureFailuresInARow: watch.signatureFailuresInARow,
        lastSignatureFailureAt: watch.lastSignatureFailureAt,
        newestReceivedAt: readings ? newest : undefined,
        oldestPendingAgeMs: readings?.oldestPendingAgeMs,
        oldestPendingResource: readings?.oldestPendingResource,
        recentlyDead: readings?.recentlyDead,
        quarantined: readings?.quarantined,
        openIssues: readings?.openIssues,
        // An activity probe from before the latest delivery says nothing about the silence since.
        activity: activity && activity.readAt >= heardAt ? activity : undefined,
        sender,
        // Each account's newest run: one account's drift is not hidden by another's clean run after it.
        sweep: sweep === undefined ? undefined : sweepSummaryOf(sweep.runs),
      },
      thresholds,
    );
    return { ...report, sweeper: sweep?.newest ?? null, sweeps: sweep?.perAccount ?? [] };
  };

  let latest = evaluate();
  let evaluating: Promise<HealthReport> | undefined;
  const interval = timerDelay(thresholds.evaluateEveryMs, 'The alarms interval (alarms.evaluateEveryMs)');
  const timer = setInterval(() => {
    if (evaluating) return;
    evaluating = evaluate();
    evaluating
      .then((report) => {
        latest = Promise.resolve(report);
      })
      .catch((err: unknown) => logger.error({ err }, 'alarms: evaluation failed'))
      .finally(() => {
        evaluating = undefined;
      });
  }, interval);
  timer.unref();

  return {
    health: () => latest,
    async evaluate() {
      const report = await evaluate();
      latest = Promise.resolve(report);
      return report;
    },
    async stop() {
      clearInterval(timer);
      controller.abort(new Error('serve is stopping'));
      await Promise.allSettled([probing, evaluating, latest]);
    },
  };
}
