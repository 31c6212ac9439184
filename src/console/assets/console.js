// The operator console: plain JavaScript over /admin/api/, no framework and nothing fetched from elsewhere. The
// token is asked for once and kept in this tab's session storage; every request sends it as a bearer header.

const TOKEN_KEY = 'payhooks-console-token';
const POLL_MS = 5000;
const $ = (id) => document.getElementById(id);

const state = { filters: {}, selected: null, timer: null };

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
  $('login').hidden = false;
  $('login-message').textContent = message || '';
  $('token').focus();
}

function start() {
  $('login').hidden = true;
  $('main').hidden = false;
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
      el('td', {}, el('button', { type: 'button', class: 'link', onclick: () => showEvent(event.eventId, true) }, event.eventId)),
      el('td', {}, event.eventType),
      el('td', {}, el('span', { class: `status status-${event.status}` }, event.status)),
      el('td', { class: 'num' }, event.attempts),
      el('td', { class: 'num' }, event.deliveries),
      el('td', {}, new Date(event.receivedAt).toLocaleString()),
      el('td', { class: 'error' }, event.lastError || ''),
    ),
  );
  $('events').replaceChildren(...rows);
  $('empty').hidden = events.length > 0;
}

async function loadStats() {
  const stats = await api('/stats?hours=3');
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

// The alarms, the gap sweeper's newest run and the last verify. Served by payhooks serve only: elsewhere (the API
// mounted in an app) the panel says so instead of failing the whole refresh.
async function loadHealth() {
  let health;
  let verify;
  try {
    [health, verify] = await Promise.all([api('/health'), api('/verify')]);
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
  $('sweeper').textContent = describeRun(health.sweeper, 'no sweep recorded yet');
  $('sweeper-findings').replaceChildren(...findingsOf(health.sweeper).map((text) => el('li', {}, text)));
  $('verify-run').disabled = verify.running !== null;
  $('verify-state').textContent = verify.running
    ? `verify running since ${new Date(verify.running.startedAt).toLocaleTimeString()}`
    : describeRun(verify.last, 'no verify recorded yet');
}

function describeRun(run, none) {
  if (!run) return none;
  const parts = [`${run.trigger} run of ${new Date(run.finishedAt).toLocaleString()}: ${run.outcome}`];
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
    await api('/verify', { method: 'POST', body: JSON.stringify({ sample, repair: $('verify-repair').checked }) });
    $('verify-state').textContent = 'verify started';
  } catch (err) {
    $('verify-state').textContent = `not started: ${err.message}`;
  }
  await refresh();
}

// Deliveries (bars) and failures (red bars) per minute over the last three hours, in inline SVG.
function drawChart(activity) {
  const svg = $('chart');
  const width = 720;
  const height = 120;
  const now = Date.now();
  const start = now - 3 * 3600_000;
  const max = Math.max(1, ...activity.map((m) => m.deliveries));
  const bar = width / 180;
  const shapes = [];
  for (const minute of activity) {
    const x = ((new Date(minute.minute).getTime() - start) / (3 * 3600_000)) * width;
    const h = (minute.deliveries / max) * (height - 10);
    const f = (minute.failures / max) * (height - 10);
    shapes.push(
      `<rect x="${x.toFixed(1)}" y="${(height - h).toFixed(1)}" width="${bar.toFixed(1)}" height="${h.toFixed(1)}" class="bar"/>`,
    );
    if (f > 0)
      shapes.push(
        `<rect x="${x.toFixed(1)}" y="${(height - f).toFixed(1)}" width="${bar.toFixed(1)}" height="${f.toFixed(1)}" class="fail"/>`,
      );
  }
  svg.innerHTML = `<title>Deliveries and failing events per minute</title>${shapes.join('')}`;
  const total = activity.reduce((sum, m) => sum + m.deliveries, 0);
  const failed = activity.reduce((sum, m) => sum + m.failures, 0);
  $('chart-summary').textContent = `last 3 hours: ${total} deliveries, ${failed} events with failures (peak ${max} a minute)`;
}

async function showEvent(eventId, focus, reveal = false) {
  state.selected = eventId;
  const event = await api(`/events/${encodeURIComponent(eventId)}${reveal ? '?reveal=true' : ''}`);
  let body = event.rawBody;
  try {
    body = JSON.stringify(JSON.parse(event.rawBody), null, 2);
  } catch {
    // not JSON (an invalid event): shown as stored
  }
  const detail = $('detail');
  detail.hidden = false;
  $('detail-title').textContent = `${event.eventType} ${event.eventId}`;
  $('detail-facts').replaceChildren(
    ...[
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
    await api(`/events/${encodeURIComponent(state.selected)}/replay`, { method: 'POST', body: '{}' });
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
  const result = await api('/replay', { method: 'POST', body: JSON.stringify({ status, type: type || undefined }) });
  $('notice').textContent = `${result.replayed} events re-queued`;
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
    const form = new FormData($('filters'));
    state.filters = Object.fromEntries([...form.entries()].map(([k, v]) => [k, String(v).trim()]));
    refresh();
  });
  $('replay').addEventListener('click', replaySelected);
  $('replay-filtered').addEventListener('click', replayFiltered);
  $('verify-form').addEventListener('submit', runVerify);
  $('reveal').addEventListener('click', () => {
    if (confirm('Show this event with its emails and phone numbers? The console logs that you did.'))
      showEvent(state.selected, false, true);
  });
  $('close-detail').addEventListener('click', () => {
    state.selected = null;
    $('detail').hidden = true;
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin('Signed out.');
  });
  if (token()) start();
  else showLogin();
});
