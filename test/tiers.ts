// Which tier each test file runs in: vitest.config.ts makes one vitest project of each, and refuses to start while a
// test file is in no tier or in two (naming it). A new test file goes in exactly one list below; docs/testing.md
// says which. Files are named one by one, never by a pattern, so that a new file cannot land in a tier unseen.
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The tiers; `npm test` runs them all, in the order test/sequencer.ts gives. */
export const TIER_NAMES = ['unit', 'db', 'e2e', 'soak'] as const;
export type Tier = (typeof TIER_NAMES)[number];

/**
 * - `unit`: no database, no broker, no child process; in-process HTTP servers on loopback are fine. Seconds.
 * - `db`: in-process, against the real PostgreSQL server and PGlite (and the brokers).
 * - `e2e`: real processes (the CLI through tsx, the built package, examples, worker processes) and the browser.
 * - `soak`: long fault and flood scenarios: partitions, broker outages, thousands of connections.
 */
export const TIERS: Record<Tier, readonly string[]> = {
  unit: [
    'test/alarms/alarm-checks.test.ts',
    'test/architecture.test.ts',
    'test/cli/arguments.test.ts',
    'test/store/connection-hosts.test.ts',
    'test/docs/deployment.test.ts',
    'test/cli/env.test.ts',
    'test/cli/serve-doctor-agree.test.ts',
    'test/cli/until-signal.test.ts',
    'test/cli/verify-arguments.test.ts',
    'test/client/errors.test.ts',
    'test/client/input-checks.test.ts',
    'test/client/logging.test.ts',
    'test/client/methods.test.ts',
    'test/client/pagination.test.ts',
    'test/client/retries.test.ts',
    'test/client/simulator.test.ts',
    'test/console/failure-throttle.test.ts',
    'test/docs/alerts.test.ts',
    'test/docs/event-reference.test.ts',
    'test/docs/links.test.ts',
    'test/docs/worker-defaults.test.ts',
    'test/engines.test.ts',
    'test/events/catalog.test.ts',
    'test/events/certain-validator.test.ts',
    'test/events/parse-json-event.test.ts',
    'test/events/stored-valid-event.test.ts',
    'test/internal/storable-text.test.ts',
    'test/logger.test.ts',
    'test/long-functions.test.ts',
    'test/public-surface.test.ts',
    'test/receiver/node-body-reader.test.ts',
    'test/service/accounts-config.test.ts',
    'test/service/tracing-config.test.ts',
    'test/service/worker-process.test.ts',
    'test/signature/default-scheme.test.ts',
    'test/signature/failures.test.ts',
    'test/signature/hmac-scheme.test.ts',
    'test/signature/standard-webhooks.test.ts',
    'test/simulator/cli-arguments.test.ts',
    'test/simulator/clock.test.ts',
    'test/simulator/loop-commands.test.ts',
    'test/testing/test-simulator.test.ts',
    'test/simulator/events.test.ts',
    'test/simulator/flows.test.ts',
    'test/simulator/openapi.test.ts',
    'test/simulator/organizations-session.test.ts',
    'test/simulator/organizations.test.ts',
    'test/simulator/request-body.test.ts',
    'test/simulator/rest.test.ts',
    'test/simulator/retries.test.ts',
    'test/simulator/rotation.test.ts',
    'test/simulator/sandbox.test.ts',
    'test/simulator/session.test.ts',
    'test/store/deadline-storage.test.ts',
    'test/store/real-data-dir.test.ts',
    'test/sync/broker-descriptions.test.ts',
    'test/sync/config.test.ts',
    'test/sync/sink-accounts.test.ts',
    'test/sync/http-helper.test.ts',
    'test/sync/rabbitmq-errors.test.ts',
    'test/sync/reconcile-arguments.test.ts',
    'test/sync/verify-compare.test.ts',
    'test/sync/verify-stored-names.test.ts',
    'test/tiers.test.ts',
    'test/worker/history-settings.test.ts',
    'test/worker/backoff.test.ts',
    'test/store/until-admitted.test.ts',
    'test/worker/settle-policy.test.ts',
    'test/worker/task-queue.test.ts',
  ],
  db: [
    'test/cli/accounts-sync.test.ts',
    'test/cli/database-hints.test.ts',
    'test/cli/effects-commands.test.ts',
    'test/cli/events-show-accounts.test.ts',
    'test/cli/migrate-dir.test.ts',
    'test/cli/quarantine.test.ts',
    'test/cli/service-start.test.ts',
    'test/client/rate-limit.test.ts',
    'test/console/admin-api.test.ts',
    'test/console/issues-api.test.ts',
    'test/console/admin-story.test.ts',
    'test/examples/crm-connector.test.ts',
    'test/handlers/direct-debit-races.test.ts',
    'test/handlers/direct-debit.test.ts',
    'test/receiver/ack-budget.test.ts',
    'test/receiver/account-adapters.test.ts',
    'test/receiver/adapters.test.ts',
    'test/receiver/durability.test.ts',
    'test/receiver/failures.test.ts',
    'test/receiver/group-commit.test.ts',
    'test/receiver/poison.test.ts',
    'test/receiver/quarantine-race.test.ts',
    'test/receiver/quarantine.test.ts',
    'test/receiver/trace-context.test.ts',
    'test/service/account-budgets.test.ts',
    'test/service/alarms.test.ts',
    'test/service/service-library.test.ts',
    'test/service/tracing-tree.test.ts',
    'test/simulator/chaos.test.ts',
    'test/simulator/end-to-end.test.ts',
    'test/store/accounts.test.ts',
    'test/store/accounts-upgrade.test.ts',
    'test/store/attempts.test.ts',
    'test/store/host-list.test.ts',
    'test/store/fair-claim.test.ts',
    'test/store/bytewise-keys.test.ts',
    'test/store/outcome-partitions.test.ts',
    'test/store/claim-accounts-read.test.ts',
    'test/store/claim-attempts.test.ts',
    'test/store/claim-order.test.ts',
    'test/store/history-partitions.test.ts',
    'test/store/issues.test.ts',
    'test/service/issue-notifier.test.ts',
    'test/store/ledger.test.ts',
    'test/store/claim-plan.test.ts',
    'test/store/fencing.test.ts',
    'test/store/long-queue.test.ts',
    'test/store/operator-story.test.ts',
    'test/store/operator-queries.test.ts',
    'test/store/per-handler-claim.test.ts',
    'test/store/prune-account.test.ts',
    'test/store/prune-replay-race.test.ts',
    'test/store/store.test.ts',
    'test/store/statement-timeout.test.ts',
    'test/store/terminated-connection.test.ts',
    'test/store/prepared-statements.test.ts',
    'test/store/schema-dump.test.ts',
    'test/sync/backfill-repeated-page.test.ts',
    'test/sync/backfill.test.ts',
    'test/sync/broker-trace-context.test.ts',
    'test/sync/brokers.test.ts',
    'test/sync/gap-sweep-accounts.test.ts',
    'test/sync/gap-sweep.test.ts',
    'test/sync/mirror-accounts.test.ts',
    'test/sync/mirror-nul.test.ts',
    'test/sync/mirror-sink.test.ts',
    'test/sync/mirror-write.test.ts',
    'test/simulator/organizations-api.test.ts',
    'test/sync/accounts-day.test.ts',
    'test/sync/scripted-day.test.ts',
    'test/sync/sink-order.test.ts',
    'test/sync/sink-plugins.test.ts',
    'test/sync/stored-names-paging.test.ts',
    'test/sync/verify-every-kind.test.ts',
    'test/sync/verify-mirror.test.ts',
    'test/testing/signed-request.test.ts',
    'test/worker/app-tables.test.ts',
    'test/worker/data-checked.test.ts',
    'test/worker/dead-events-counter.test.ts',
    'test/worker/effects-hot-path.test.ts',
    'test/worker/effects.test.ts',
    'test/worker/per-handler-order.test.ts',
    'test/worker/registration.test.ts',
    'test/worker/worker-events.test.ts',
    'test/worker/worker.test.ts',
  ],
  e2e: [
    'test/cli/backfill.test.ts',
    'test/cli/beside-serve.test.ts',
    'test/cli/bulk-commands.test.ts',
    'test/cli/story-and-window.test.ts',
    'test/cli/cli-helpers.test.ts',
    'test/cli/cli.test.ts',
    'test/cli/config-at-start.test.ts',
    'test/cli/cpu-bound-handler.test.ts',
    'test/cli/data-dir-symlink.test.ts',
    'test/cli/doctor.test.ts',
    'test/cli/init.test.ts',
    'test/cli/issues.test.ts',
    'test/cli/log-format.test.ts',
    'test/cli/metrics.test.ts',
    'test/cli/piped-output.test.ts',
    'test/cli/printing.test.ts',
    'test/cli/prune-beside-replay.test.ts',
    'test/cli/serve-aborted-requests.test.ts',
    'test/cli/serve-effect-kill.test.ts',
    'test/cli/serve-sinks.test.ts',
    'test/cli/serve-start-signals.test.ts',
    'test/cli/serve-tracing.test.ts',
    'test/cli/serve-worker-child.test.ts',
    'test/cli/serve-worker-options.test.ts',
    'test/cli/serve.test.ts',
    'test/cli/verify-session.test.ts',
    'test/cli/wait-for-slot.test.ts',
    'test/cli/verify.test.ts',
    'test/console/admin-mount.test.ts',
    'test/console/console-browser.test.ts',
    'test/console/accounts-browser.test.ts',
    'test/console/issues-browser.test.ts',
    'test/console/console-story-browser.test.ts',
    'test/docs/promtool.test.ts',
    'test/entry-loads.test.ts',
    'test/examples/direct-debit.test.ts',
    'test/examples/express-app.test.ts',
    'test/examples/fetch-runtime.test.ts',
    'test/examples/standalone-sync.test.ts',
    'test/packaging.test.ts',
    'test/service/app-worker-child.test.ts',
    'test/simulator/cli.test.ts',
    'test/simulator/developer-loop.test.ts',
    'test/simulator/first-session.test.ts',
    'test/simulator/organizations-serve.test.ts',
    'test/store/data-dir-lock.test.ts',
    'test/sync/http-forward.test.ts',
    'test/sync/reconcile.test.ts',
    'test/worker/poison-handlers.test.ts',
    'test/worker/processes.test.ts',
    'test/worker/relisten.test.ts',
  ],
  soak: [
    'test/soak/account-fairness.test.ts',
    'test/soak/partition-fencing.test.ts',
    'test/cli/partition.test.ts',
    'test/cli/serve-broker-faults.test.ts',
    'test/receiver/bounded-memory.test.ts',
    'test/receiver/two-receivers.test.ts',
    'test/store/partition-upkeep-beside-outcomes.test.ts',
    'test/store/ha-failover.test.ts',
    'test/store/pgbouncer.test.ts',
    'test/sync/broker-faults.test.ts',
    'test/worker/effects-chaos.test.ts',
  ],
};

/** Every `*.test.ts` under test/, as paths from the repository's root (`test/cli/cli.test.ts`). */
export function testFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.test.ts')) found.push(relative(root, path).split('\\').join('/'));
    }
  };
  walk(join(root, 'test'));
  return found.sort();
}

/**
 * What is wrong with the tiers, one line per file: a test file in no tier or in two, or a listed file that does
 * not exist. Empty when every test file is in exactly one tier.
 */
export function tierProblems(root: string): string[] {
  const files = testFiles(root);
  const problems: string[] = [];
  for (const file of files) {
    const tiers = TIER_NAMES.filter((tier) => TIERS[tier].includes(file));
    if (tiers.length === 0) problems.push(`${file} is in no tier: add it to one list in test/tiers.ts (see docs/testing.md)`);
    if (tiers.length > 1) problems.push(`${file} is in ${tiers.join(' and ')}: keep it in one list in test/tiers.ts`);
  }
  for (const tier of TIER_NAMES) {
    for (const file of TIERS[tier]) {
      if (!files.includes(file)) problems.push(`${file} is listed in the ${tier} tier of test/tiers.ts but does not exist`);
    }
  }
  return problems;
}
