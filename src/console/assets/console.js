// The operator console: plain JavaScript over /admin/api/, no framework and nothing fetched from elsewhere. The
// token is asked for once and kept in this tab's session storage; every request sends it as a bearer header.

const TOKEN_KEY = 'payhooks-console-token';
const POLL_MS = 5000;
const $ = (id) => document.getElementById(id);

const state = { filters: {}, selected: null, story: null, timer: null, bulk: null };

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(path, options = {}) {
  const response = await fetch(`/admin/api${path}`, {
    ...options,
    headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/json', ...(options.headers || {}) },
  });
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin('The token was refused. Give the console token (PAYHOOKS_ADMIN_TOKEN).');
    throw new Error('unauthorized');
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error ? body.error.message : `HTTP ${response.status}`);
  return body;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'onclick') node.addEventListener('click', value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? '')));
  return node;
}

function showLogin(message) {
  clearInterval(state.timer);
  $('main').hidden = true;
  $('search').hidden = true;
  $('login').hidden = false;
  $('login-message').textContent = message || '';
  $('token').focus();
}

function start() {
  $('login').hidden = true;
  $('main').hidden = false;
  $('search').hidden = false;
  refresh();
  clearInterval(state.timer);
  state.timer = setInterval(() => {
    if ($('live').checked) refresh();
  }, POLL_MS);
}

async function refresh() {
  try {
    await Promise.all([loadEvents(), loadStats(), loadHealth()]);
    if (state.selected) await showEvent(state.selected, false);
    if (state.story) await showStory(state.story, false);
    $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    if (err.message !== 'unauthorized') $('updated').textContent = `could not update: ${err.message}`;
  }
}

async function loadEvents() {
  const query = new URLSearchParams(Object.entries(state.filters).filter(([, v]) => v));
  const { events } = await api(`/events?${query}`);
  const rows = events.map((event) =>
    el(
      'tr',
      { 'data-event-id': event.eventId, 'data-status': event.status },
      el(
        'td',
        {},
        el('button', { type: 'button', class: 'link', onclick: () => showEvent(event.eventId, true, false, event.account) }, event.eventId),
      ),
      el('td', {}, event.eventType),
      el('td', {}, el('span', { class: `status status-${event.status}` }, event.status)),
      el('td', { class: 'num wide' }, event.attempts),
      el('td', { class: 'num wide' }, event.deliveries),
      el('td', {}, new Date(event.receivedAt).toLocaleString()),
      el('td', { class: 'error wide' }, event.lastError || ''),
    ),
  );
  $('events').replaceChildren(...rows);
  $('empty').hidden = events.length > 0;
}

async function loadStats() {
  const stats = await api(`/stats?${new URLSearchParams({ hours: '3', ...byAccount() })}`);
  $('counts').replaceChildren(
    ...Object.entries(stats.byStatus).map(([status, count]) =>
      el('li', {}, el('span', { class: `status status-${status}` }, status), ` ${count}`),
    ),
  );
  $('backlog').textContent = stats.oldestPending
    ? `oldest pending: ${stats.oldestPending.eventId}, ${Math.round(stats.oldestPending.ageMs / 1000)} s old`
    : 'nothing pending';
  drawChart(stats.activity);
}

// The alarms, the gap sweeper's newest run of each account and the last verify (of the account filtered on, or of
// each). Served by payhooks serve only: elsewhere (the API mounted in an app) the panel says so instead of failing the
// whole refresh.
async function loadHealth() {
  let health;
  let verify;
  try {
    [health, verify] = await Promise.all([api('/health'), api(`/verify?${new URLSearchParams(byAccount())}`)]);
  } catch (err) {
    if (err.message === 'unauthorized') throw err;
    $('health-status').textContent = `no health here: ${err.message}`;
    $('verify-form').hidden = true;
    return;
  }
  $('verify-form').hidden = false;
  $('health-status').textContent = `overall: ${health.status} (evaluated ${new Date(health.evaluatedAt).toLocaleTimeString()})`;
  $('health-status').dataset.status = health.status;
  $('alarms').replaceChildren(
    ...health.checks.map((check) =>
      el(
        'tr',
        { 'data-alarm': check.name, 'data-status': check.status },
        el('td', {}, check.name),
        el('td', {}, el('span', { class: `alarm alarm-${check.status}` }, check.status)),
        el('td', {}, check.message),
      ),
    ),
  );
  // Each account is swept as a run of its own: its newest run each (of the account filtered on), or the newest alone.
  const account = state.filters.account;
  const each = (health.sweeps || []).length ? health.sweeps : health.sweeper ? [health.sweeper] : [];
  const sweeps = account ? each.filter((run) => run.account === account) : each;
  $('sweeper').textContent =
    sweeps.length > 1 ? `the newest run of each of ${sweeps.length} accounts:` : describeRun(sweeps[0], 'no sweep recorded yet');
  $('sweeper-findings').replaceChildren(
    ...(sweeps.length > 1
      ? sweeps.flatMap((run) => [
          el('li', { 'data-account': run.account || '' }, describeRun(run)),
          ...findingsOf(run).map((text) => el('li', {}, text)),
        ])
      : findingsOf(sweeps[0]).map((text) => el('li', {}, text))),
  );
  $('verify-run').disabled = verify.running !== null;
  const runs = verify.runs && verify.runs.length > 1 ? verify.runs : verify.last ? [verify.last] : [];
  $('verify-run').textContent = account ? `Run verify of ${account}` : 'Run verify';
  $('verify-state').textContent = verify.running
    ? `verify ${verify.running.account ? `of ${verify.running.account}` : 'of each account'} running since ${new Date(verify.running.startedAt).toLocaleTimeString()}`
    : runs.length
      ? runs.map((run) => describeRun(run)).join(' | ')
      : 'no verify recorded yet';
}

function describeRun(run, none) {
  if (!run) return none;
  const of = run.account ? `account ${run.account}, ` : '';
  const parts = [`${of}${run.trigger} run of ${new Date(run.finishedAt).toLocaleString()}: ${run.outcome}`];
  if (run.reconcile)
    parts.push(`reconcile: ${run.reconcile.missing} missing, ${run.reconcile.resent} re-sent, ${run.reconcile.unrecovered} unrecovered`);
  if (run.verify) parts.push(`verify: ${run.verify.checked} checked, ${run.verify.drift} drifted, ${run.verify.repaired} repaired`);
  if (run.error) parts.push(`error: ${run.error}`);
  return [...parts, ...run.notes].join('; ');
}

function findingsOf(run) {
  if (!run) return [];
  return run.findings
    .slice(0, 20)
    .map((f) =>
      f.kind === 'drift'
        ? `${f.resource} ${f.id}: ${f.drift}${f.repaired ? ', repaired' : ''}`
        : `event ${f.eventId} (${f.eventType}) missing${f.resent ? ', re-sent' : f.reason ? `: ${f.reason}` : ''}`,
    );
}

async function runVerify(event) {
  event.preventDefault();
  const sample = $('verify-all').checked ? null : Number($('verify-sample').value);
  try {
    // Of the account filtered on, or of each account in turn.
    await api('/verify', { method: 'POST', body: JSON.stringify({ sample, repair: $('verify-repair').checked, ...byAccount() }) });
    $('verify-state').textContent = state.filters.account ? `verify of ${state.filters.account} started` : 'verify of each account started';
  } catch (err) {
    // Nothing started, nothing to refresh: a refresh would put the last run's line over the reason at once.
    $('verify-state').textContent = `not started: ${err.message}`;
    return;
  }
  await refresh();
}

// Deliveries (bars) and events with a failure (red bars) per minute over the last three hours, in inline SVG, with
// labelled axes: time of day on x (local time, a tick every 30 minutes), deliveries per minute on y.
const CHART = { width: 760, height: 200, left: 56, right: 12, top: 12, bottom: 44, hours: 3 };

function drawChart(activity) {
  const { width, height, left, right, top, bottom, hours } = CHART;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const end = Date.now();
  const start = end - hours * 3600_000;
  const max = niceMax(Math.max(1, ...activity.map((m) => m.deliveries)));
  const x = (t) => left + ((t - start) / (end - start)) * plotW;
  const y = (v) => top + plotH - (v / max) * plotH;
  const bar = Math.max(1, plotW / (hours * 60) - 0.5);
  const parts = [`<title id="chart-title">Deliveries and failing events per minute, last ${hours} hours</title>`];
  // y axis: 0, half and the top, with grid lines.
  for (const v of [0, max / 2, max]) {
    parts.push(`<line class="grid" x1="${left}" x2="${width - right}" y1="${y(v)}" y2="${y(v)}"/>`);
    parts.push(`<text class="tick" x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  parts.push(
    `<text class="axis-label" transform="translate(14 ${top + plotH / 2}) rotate(-90)" text-anchor="middle">deliveries / minute</text>`,
  );
  // x axis: a tick every 30 minutes, on the half hour.
  const step = 30 * 60_000;
  for (let t = Math.ceil(start / step) * step; t <= end; t += step) {
    const label = new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    parts.push(`<line class="axis" x1="${x(t)}" x2="${x(t)}" y1="${top + plotH}" y2="${top + plotH + 5}"/>`);
    parts.push(`<text class="tick" x="${x(t)}" y="${top + plotH + 18}" text-anchor="middle">${label}</text>`);
  }
  parts.push(`<line class="axis" x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}"/>`);
  parts.push(`<line class="axis" x1="${left}" x2="${left}" y1="${top}" y2="${top + plotH}"/>`);
  parts.push(
    `<text class="axis-label" x="${left + plotW / 2}" y="${height - 6}" text-anchor="middle">time received (local, minute by minute)</text>`,
  );
  for (const minute of activity) {
    const at = x(new Date(minute.minute).getTime());
    parts.push(rect('bar', at, y(minute.deliveries), bar, (minute.deliveries / max) * plotH));
    if (minute.failures > 0) parts.push(rect('fail', at, y(minute.failures), bar, (minute.failures / max) * plotH));
  }
  $('chart').innerHTML = parts.join('');
  const total = activity.reduce((sum, m) => sum + m.deliveries, 0);
  const failed = activity.reduce((sum, m) => sum + m.failures, 0);
  const peak = Math.max(0, ...activity.map((m) => m.deliveries));
  $('chart-summary').textContent =
    `Last ${hours} hours: ${total} deliveries, ${failed} events with failures (peak ${peak} deliveries a minute).`;
}

function rect(kind, x, y, width, height) {
  return `<rect class="${kind}" x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${width.toFixed(1)}" height="${height.toFixed(1)}"/>`;
}

// A round top for the y axis (1, 2, 5 × 10^n), so that its ticks read as whole numbers.
function niceMax(value) {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 5, 10]) if (m * power >= value) return Math.max(2, m * power);
  return value;
}

// The account filter as query parameters: every view is held to it when one is given.
function byAccount() {
  return state.filters.account ? { account: state.filters.account } : {};
}

// One event, of `account` when it is known (an eventId is unique only within its account).
async function showEvent(eventId, focus, reveal = false, account = state.selectedAccount) {
  state.selected = eventId;
  state.selectedAccount = account;
  const query = new URLSearchParams({ ...(reveal ? { reveal: 'true' } : {}), ...(account ? { account } : {}) });
  const event = await api(`/events/${encodeURIComponent(eventId)}?${query}`);
  let body = event.rawBody;
  try {
    body = JSON.stringify(JSON.parse(event.rawBody), null, 2);
  } catch {
    // not JSON (an invalid event): shown as stored
  }
  const detail = $('detail');
  detail.hidden = false;
  $('workspace').classList.add('has-detail');
  state.selectedResource = event.resourceKey;
  $('story-open').disabled = !event.resourceKey;
  $('detail-title').textContent = `${event.eventType} ${event.eventId}`;
  $('detail-facts').replaceChildren(
    ...[
      ['account', event.account || 'default'],
      ['state', event.status],
      ['attempts', event.attempts],
      ['deliveries', event.deliveries],
      ['received', new Date(event.receivedAt).toLocaleString()],
      ['next attempt', event.status === 'pending' ? new Date(event.nextAttemptAt).toLocaleString() : '—'],
      ['processed', event.processedAt ? new Date(event.processedAt).toLocaleString() : '—'],
      ['resource', event.resourceKey || '—'],
      ['completed by', event.completedHandlers.join(', ') || '—'],
      ['given up by', event.givenUpHandlers.join(', ') || '—'],
    ].flatMap(([term, value]) => [el('dt', {}, term), el('dd', { 'data-fact': term }, value)]),
  );
  $('detail-error').textContent = event.lastError || 'no error recorded';
  // The timeline: every run of a handler, oldest first (rows carried over from before it was kept have no start).
  const attempts = event.handlerAttempts || [];
  $('detail-attempts').replaceChildren(
    ...(attempts.length
      ? attempts.map((a) =>
          el(
            'tr',
            { 'data-outcome': a.outcome },
            el('td', {}, a.attempt === null ? '—' : String(a.attempt)),
            el('td', {}, a.handler),
            el('td', {}, a.startedAt ? new Date(a.startedAt).toLocaleString() : '—'),
            el('td', {}, a.durationMs === null ? '—' : `${a.durationMs} ms`),
            el('td', {}, a.outcome),
            el('td', {}, a.error || ''),
          ),
        )
      : [el('tr', {}, el('td', { colspan: '6' }, 'no handler has run for it yet'))]),
  );
  $('detail-effects').replaceChildren(...effectRows(event.eventId, event.effectSteps || []));
  $('detail-body').textContent = body;
  $('detail-headers').textContent = JSON.stringify(event.headers, null, 2);
  $('reveal').hidden = !event.masked;
  $('replay').disabled = event.status === 'pending' || event.status === 'processing';
  if (focus) $('detail-title').focus();
}

// The event's ctx.effect steps, in the order they started; one held for review gets the operator's two answers.
function effectRows(eventId, steps) {
  if (steps.length === 0) return [el('tr', {}, el('td', { colspan: '9' }, 'no effect steps'))];
  return steps.map((s) => {
    const note = s.resolution ? `resolved ${s.resolution}` : s.error || '';
    const resolve =
      s.state === 'needs-review'
        ? [
            el('button', { type: 'button', 'data-resolution': 'done', onclick: () => resolveStep(eventId, s, 'done') }, 'It happened'),
            el('button', { type: 'button', 'data-resolution': 'redo', onclick: () => resolveStep(eventId, s, 'redo') }, 'Call again'),
          ]
        : [];
    return el(
      'tr',
      { 'data-handler': s.handler, 'data-step': s.step, 'data-state': s.state },
      el('td', {}, s.handler),
      el('td', {}, s.step),
      el('td', {}, el('span', { class: `status status-${s.state}` }, s.state)),
      el('td', {}, s.idempotent ? 'yes' : 'no'),
      el('td', { class: 'num' }, s.calls),
      el('td', { class: 'num' }, s.attempt),
      el('td', {}, new Date(s.startedAt).toLocaleString()),
      el('td', { class: 'error' }, note),
      el('td', { class: 'resolve' }, ...resolve),
    );
  });
}

async function resolveStep(eventId, step, resolution) {
  const question =
    resolution === 'done'
      ? `Record step "${step.step}" of ${step.handler} as done? It is not called again: say so only if the outside system shows it happened.`
      : `Call step "${step.step}" of ${step.handler} again, with the same idempotency key? If it did happen and the outside system does not honour the key, it happens twice.`;
  if (!confirm(question)) return;
  try {
    const outcome = await api(`/events/${encodeURIComponent(eventId)}/effects/resolve`, {
      method: 'POST',
      body: JSON.stringify({ step: step.step, handler: step.handler, resolution }),
    });
    $('notice').textContent = outcome.resolved
      ? `step ${step.step} resolved as ${resolution}${outcome.requeued ? `: ${eventId} re-queued` : outcome.remaining > 0 ? `: ${outcome.remaining} more still need review` : ''}`
      : `not resolved: the step is ${outcome.state || outcome.reason}`;
  } catch (err) {
    $('notice').textContent = `not resolved: ${err.message}`;
  }
  await refresh();
}

async function replaySelected() {
  if (!state.selected || !confirm(`Replay ${state.selected}? Handlers that did not complete run again.`)) return;
  try {
    // Of the account it was shown for: an eventId is unique only within its account.
    const query = state.selectedAccount ? `?${new URLSearchParams({ account: state.selectedAccount })}` : '';
    await api(`/events/${encodeURIComponent(state.selected)}/replay${query}`, { method: 'POST', body: '{}' });
    $('notice').textContent = `${state.selected} re-queued`;
  } catch (err) {
    $('notice').textContent = `not replayed: ${err.message}`;
  }
  await refresh();
}

async function replayFiltered() {
  const { status, type } = state.filters;
  if (!['dead', 'invalid', 'ignored', 'done'].includes(status)) {
    $('notice').textContent = 'Filter by a state (dead, invalid, ignored or done) to replay every event in it.';
    return;
  }
  if (!confirm(`Replay every ${status} event${type ? ` of type ${type}` : ''}?`)) return;
  const result = await api('/replay', {
    method: 'POST',
    body: JSON.stringify({ status, type: type || undefined, account: state.filters.account || undefined }),
  });
  $('notice').textContent = `${result.replayed} events re-queued`;
  await refresh();
}

// The filters as the API takes them: the local times of the range as ISO 8601 instants.
function readFilters() {
  const form = new FormData($('filters'));
  const filters = Object.fromEntries([...form.entries()].map(([k, v]) => [k, String(v).trim()]));
  for (const bound of ['from', 'to']) if (filters[bound]) filters[bound] = new Date(filters[bound]).toISOString();
  return filters;
}

function closeDetail() {
  state.selected = null;
  $('detail').hidden = true;
  $('workspace').classList.remove('has-detail');
  $('events-title').focus();
}

// The search box: a resource (kind:id) opens its story; anything else is looked up as an eventId, a sender's id or a
// quarantine number; a bare id that names none of those is tried as a resource of any kind.
async function search(text) {
  if (!text) return;
  $('search-result').textContent = '';
  try {
    if (/^(invoice|customer|payment|dispute|subscription):./.test(text)) return await showStory(text, true);
    const found = await api(`/find?${new URLSearchParams({ id: text, ...byAccount() })}`).catch((err) => {
      if (err.message === 'unauthorized') throw err;
      return null;
    });
    if (found && found.kind !== 'quarantine') {
      $('search-result').textContent =
        found.kind === 'event'
          ? `${text} is an eventId${elsewhere(found)}`
          : `${text} is the sender's ${found.header} of event ${found.eventId}${elsewhere(found)}`;
      return await showEvent(found.eventId, true, false, found.account);
    }
    if (found) {
      $('search-result').textContent =
        `${text} is quarantined delivery #${found.quarantineId} (${found.state}${found.eventId ? `, eventId ${found.eventId}` : ''}): payhooks quarantine show ${found.quarantineId}`;
      return;
    }
    const story = await api(`/story?${new URLSearchParams({ resource: text, ...byAccount() })}`);
    if (story.events.length > 0 || (story.mirror && story.mirror.length > 0)) return await showStory(text, true);
    $('search-result').textContent = `Nothing is stored under ${text}: no eventId, sender's id, quarantine number or resource.`;
  } catch (err) {
    if (err.message !== 'unauthorized') $('search-result').textContent = `not found: ${err.message}`;
  }
}

// An eventId (or a sender's id) is unique only within its account: when several hold it, say so, and which one is shown.
function elsewhere(found) {
  if (!found.accounts || found.accounts.length < 2) return '';
  return ` in ${found.accounts.length} accounts (${found.accounts.join(', ')}): showing ${found.account}'s; filter by account to see another's`;
}

// A resource's story: its events oldest first, each with every handler run and effect step, and its mirror row now.
async function showStory(resource, focus, reveal = false) {
  const story = await api(`/story?${new URLSearchParams({ resource, ...byAccount(), ...(reveal ? { reveal: 'true' } : {}) })}`);
  state.story = resource;
  $('story').hidden = false;
  $('story-title').textContent = `Story of ${story.resource}`;
  $('story-reveal').hidden = !story.masked;
  $('story-summary').textContent =
    `${story.events.length} event${story.events.length === 1 ? '' : 's'}, oldest first` +
    (story.truncated ? ' (older ones left out)' : '') +
    (story.keys.length > 1 ? `; looked up as ${story.keys.join(', ')}` : '');
  $('story-events').replaceChildren(...story.events.map(storyItem));
  if (story.mirror === null) {
    $('story-mirror-note').textContent = 'No mirror is in use here.';
    $('story-mirror').parentElement.hidden = true;
  } else {
    $('story-mirror-note').textContent = story.mirror.length
      ? `${story.mirror.map((r) => `${r.table} ${r.id}`).join(', ')}:`
      : 'No mirror row.';
    $('story-mirror').parentElement.hidden = story.mirror.length === 0;
    $('story-mirror').textContent = story.mirror.map((r) => JSON.stringify(r.row, null, 2)).join('\n');
  }
  if (focus) $('story-title').focus();
}

function storyItem(event) {
  const runs = event.handlerAttempts.map((a) =>
    el(
      'li',
      { 'data-outcome': a.outcome },
      `run ${a.attempt ?? '—'} of ${a.handler}: ${a.outcome}${a.durationMs === null ? '' : ` in ${a.durationMs} ms`}`,
      a.error ? ` — ${a.error}` : '',
    ),
  );
  const steps = event.effectSteps.map((x) =>
    el('li', { 'data-state': x.state }, `effect ${x.handler} “${x.step}”: ${x.state}, ${x.calls} call(s)`),
  );
  return el(
    'li',
    { 'data-event-id': event.eventId, 'data-status': event.status },
    el(
      'p',
      { class: 'event' },
      el('time', { datetime: event.receivedAt }, new Date(event.receivedAt).toLocaleString()),
      ' ',
      el('button', { type: 'button', class: 'link', onclick: () => showEvent(event.eventId, true, false, event.account) }, event.eventId),
      ` ${event.eventType} `,
      el('span', { class: `status status-${event.status}` }, event.status),
      ` · ${event.attempts} attempt(s), ${event.deliveries} deliver${event.deliveries === 1 ? 'y' : 'ies'}`,
    ),
    runs.length || steps.length ? el('ul', {}, ...runs, ...steps) : el('p', { class: 'hint' }, 'no handler has run for it'),
  );
}

// Replay by selection: the filters' state, type and time range, and a handler; counted first (a dry run), then run.
function selectionBody() {
  const { status, type, from, to } = state.filters;
  const handler = $('bulk-handler').value.trim();
  if (!from || !to) return { error: 'Set both ends of the time range above (and Apply), then count.' };
  if (status && !['dead', 'invalid', 'ignored', 'done', 'needs-review'].includes(status))
    return { error: `A replay takes finished or failed events, not ${status} ones: choose another state or any.` };
  return {
    since: from,
    until: to,
    status: status || undefined,
    type: type || undefined,
    handler: handler || undefined,
    account: state.filters.account || undefined,
  };
}

function resetBulk() {
  state.bulk = null;
  $('bulk-run').disabled = true;
  $('bulk-run').textContent = 'Replay the selection';
}

async function countSelection() {
  resetBulk();
  const body = selectionBody();
  if (body.error) {
    $('bulk-result').textContent = body.error;
    return;
  }
  try {
    const preview = await api('/replay', { method: 'POST', body: JSON.stringify({ ...body, dryRun: true }) });
    $('bulk-result').textContent =
      preview.count === 0
        ? 'No event matches the selection.'
        : `${preview.count} event${preview.count === 1 ? '' : 's'} would be re-queued, first: ${preview.sample.join(', ')}`;
    if (preview.count > 0) {
      state.bulk = { body, count: preview.count };
      $('bulk-run').disabled = false;
      $('bulk-run').textContent = `Replay ${preview.count} event${preview.count === 1 ? '' : 's'}…`;
    }
  } catch (err) {
    if (err.message !== 'unauthorized') $('bulk-result').textContent = `not counted: ${err.message}`;
  }
}

async function runSelection() {
  const bulk = state.bulk;
  if (!bulk || !confirm(`Replay the ${bulk.count} selected events? Handlers that did not complete run again.`)) return;
  try {
    const result = await api('/replay', { method: 'POST', body: JSON.stringify(bulk.body) });
    $('bulk-result').textContent = `${result.replayed} event${result.replayed === 1 ? '' : 's'} re-queued`;
  } catch (err) {
    if (err.message !== 'unauthorized') $('bulk-result').textContent = `not replayed: ${err.message}`;
  }
  resetBulk();
  await refresh();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    $('token').value = '';
    start();
  });
  $('filters').addEventListener('submit', (event) => {
    event.preventDefault();
    state.filters = readFilters();
    resetBulk();
    refresh();
  });
  $('replay').addEventListener('click', replaySelected);
  $('replay-filtered').addEventListener('click', replayFiltered);
  $('verify-form').addEventListener('submit', runVerify);
  $('reveal').addEventListener('click', () => {
    if (confirm('Show this event with its emails and phone numbers? The console logs that you did.'))
      showEvent(state.selected, false, true);
  });
  $('close-detail').addEventListener('click', closeDetail);
  $('story-open').addEventListener('click', () => state.selectedResource && showStory(state.selectedResource, true));
  $('close-story').addEventListener('click', () => {
    state.story = null;
    $('story').hidden = true;
    $('search-id').focus();
  });
  $('story-reveal').addEventListener('click', () => {
    if (state.story && confirm('Show this story with its emails and phone numbers? The console logs that you did.'))
      showStory(state.story, true, true);
  });
  $('search-form').addEventListener('submit', (event) => {
    event.preventDefault();
    search($('search-id').value.trim());
  });
  $('bulk-form').addEventListener('submit', (event) => {
    event.preventDefault();
    countSelection();
  });
  $('bulk-run').addEventListener('click', runSelection);
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !$('detail').hidden && $('detail').contains(document.activeElement)) closeDetail();
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin('Signed out.');
  });
  if (token()) start();
  else showLogin();
});
