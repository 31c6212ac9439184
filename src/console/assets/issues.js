// The console's issues view: failures grouped by (handler or sink, error class, event type), their states and "replay
// affected". A module of its own beside console.js (which it does not depend on): it builds its section into the page's
// <main>, reads the same token from this tab's session storage, and asks /admin/api/issues. Plain JavaScript, no
// framework, nothing fetched from elsewhere; every control is a native button, select or link, so the keyboard reaches
// all of it. The page's account filter (the form #filters, applied on submit) holds this view too: the issues with
// failures in that account, counted in it, and "replay affected" of its events only.

(() => {
  const TOKEN_KEY = 'payhooks-console-token';
  const POLL_MS = 5000;
  // account: the account filter applied ('' for every account).
  const view = { state: 'open', account: '', selected: null, busy: false };
  const byId = (id) => document.getElementById(id);

  async function api(path, options = {}) {
    const response = await fetch(`/admin/api${path}`, {
      ...options,
      headers: { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}`, 'content-type': 'application/json' },
    });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.error ? body.error.message : `HTTP ${response.status}`);
    return body;
  }

  // `el` is console.js's (a classic script, loaded first: its functions are the page's), one way of making nodes.
  const el = globalThis.el;

  const sourceText = (issue) =>
    issue.source && issue.source.kind === 'sink' ? `sink ${issue.source.prefix} ${issue.source.name}` : `handler ${issue.handler}`;
  const titleOf = (issue) => `${sourceText(issue)}: ${issue.errorClass} on ${issue.eventType}`;
  const when = (iso) => new Date(iso).toLocaleString();
  // The account filter as query parameters or body fields: nothing for every account.
  const inAccount = () => (view.account ? { account: view.account } : {});
  const ofAccount = () => (view.account ? ` in account ${view.account}` : '');

  // The section, built once: a heading, a filter by state, the list, and the detail of the issue opened.
  function build() {
    const main = byId('main');
    if (!main || byId('issues')) return;
    const section = el(
      'section',
      { id: 'issues', 'aria-labelledby': 'issues-title' },
      el('h2', { id: 'issues-title' }, 'Issues'),
      el(
        'p',
        { class: 'hint' },
        'Failures grouped by handler or sink, error class and event type. Acknowledge one you are on; once its cause is fixed, replay its affected events: the issue is resolved, and reopens if it fails again.',
      ),
      el(
        'form',
        { id: 'issues-filter' },
        el(
          'label',
          { for: 'issues-state' },
          'State ',
          el(
            'select',
            { id: 'issues-state', name: 'state' },
            el('option', { value: 'open' }, 'open'),
            el('option', { value: 'acknowledged' }, 'acknowledged'),
            el('option', { value: 'resolved' }, 'resolved'),
            el('option', { value: 'ignored' }, 'ignored'),
            el('option', { value: '' }, 'any'),
          ),
        ),
        el('button', { type: 'submit', id: 'issues-apply' }, 'Show'),
      ),
      el('p', { id: 'issues-scope', class: 'hint' }),
      el('p', { id: 'issues-notice', role: 'status' }),
      el(
        'table',
        { 'aria-labelledby': 'issues-title' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            ...['Issue', 'State', 'Events', 'Not done', 'Failures', 'First seen', 'Last seen'].map((name) =>
              el('th', { scope: 'col' }, name),
            ),
          ),
        ),
        el('tbody', { id: 'issues-rows' }),
      ),
      el('p', { id: 'issues-empty', hidden: '' }, 'No issues in this state.'),
      detail(),
    );
    main.prepend(section);
    byId('issues-state').value = view.state;
    byId('issues-filter').addEventListener('submit', (event) => {
      event.preventDefault();
      view.state = byId('issues-state').value;
      load();
    });
    // The events' filter form (console.js) applies the account to every view: this one follows it when submitted.
    const filters = byId('filters');
    if (filters)
      filters.addEventListener('submit', () => {
        view.account = String(new FormData(filters).get('account') || '').trim();
        load();
      });
  }

  function detail() {
    const act = (action, label) =>
      el('button', { type: 'button', id: `issue-${action}`, 'data-action': action, onclick: () => move(action) }, label);
    return el(
      'div',
      { id: 'issue-detail', hidden: '', role: 'region', 'aria-labelledby': 'issue-title' },
      el('h3', { id: 'issue-title', tabindex: '-1' }, 'Issue'),
      el(
        'div',
        { class: 'actions' },
        act('acknowledge', 'Acknowledge'),
        el('button', { type: 'button', id: 'issue-replay', onclick: replay }, 'Replay affected…'),
        act('resolve', 'Resolve'),
        act('ignore', 'Ignore'),
        el('button', { type: 'button', id: 'issue-close', onclick: close }, 'Close'),
      ),
      el('dl', { id: 'issue-facts' }),
      el('h4', {}, 'Last error'),
      el('pre', { id: 'issue-error' }),
      el('h4', { id: 'issue-events-title' }, 'Affected events'),
      el(
        'table',
        { 'aria-labelledby': 'issue-events-title' },
        el(
          'thead',
          {},
          el('tr', {}, ...['Event', 'Account', 'Type', 'State', 'Attempts', 'Received'].map((name) => el('th', { scope: 'col' }, name))),
        ),
        el('tbody', { id: 'issue-events' }),
      ),
      el('p', { id: 'issue-events-more', class: 'hint' }),
    );
  }

  async function load() {
    if (view.busy || !sessionStorage.getItem(TOKEN_KEY) || byId('main').hidden) return;
    view.busy = true;
    try {
      const query = new URLSearchParams({ ...(view.state ? { state: view.state } : {}), ...inAccount() });
      const { issues } = await api(`/issues?${query}`);
      byId('issues-rows').replaceChildren(...issues.map(row));
      byId('issues-scope').textContent = view.account
        ? `Account ${view.account}: the issues with failures in it, their events counted in it alone; failures and times are the issue's, in every account.`
        : '';
      byId('issues-empty').textContent = `No issues in this state${ofAccount()}.`;
      byId('issues-empty').hidden = issues.length > 0;
      if (view.selected) await show(view.selected, false);
    } catch (err) {
      byId('issues-notice').textContent = `could not load the issues: ${err.message}`;
    } finally {
      view.busy = false;
    }
  }

  function row(issue) {
    return el(
      'tr',
      { 'data-issue-id': issue.id, 'data-handler': issue.handler, 'data-state': issue.state },
      el('td', {}, el('button', { type: 'button', class: 'link issue-link', onclick: () => show(issue.id, true) }, titleOf(issue))),
      el('td', {}, el('span', { class: `issue-state issue-${issue.state}` }, issue.state)),
      el('td', { class: 'num', 'data-col': 'affected' }, issue.affectedEvents),
      el('td', { class: 'num', 'data-col': 'unfinished' }, issue.unfinishedEvents),
      el('td', { class: 'num', 'data-col': 'failures' }, issue.failures),
      el('td', {}, when(issue.firstSeenAt)),
      el('td', {}, when(issue.lastSeenAt)),
    );
  }

  async function show(id, focus) {
    view.selected = id;
    const query = new URLSearchParams({ limit: '50', ...inAccount() });
    const { issue, events } = await api(`/issues/${encodeURIComponent(id)}?${query}`);
    byId('issue-detail').hidden = false;
    byId('issue-detail').dataset.issueId = issue.id;
    byId('issue-detail').dataset.account = view.account;
    byId('issue-title').textContent = `Issue #${issue.id}: ${titleOf(issue)}`;
    const facts = [
      ['state', issue.state],
      ['source', sourceText(issue)],
      ['error class', issue.errorClass],
      ['event type', issue.eventType],
      ...(view.account ? [['account', view.account]] : []),
      ['affected events', issue.affectedEvents],
      ['accounts', issue.affectedAccounts],
      ['not done', issue.unfinishedEvents],
      ['failures', issue.failures],
      ['first seen', when(issue.firstSeenAt)],
      ['last seen', when(issue.lastSeenAt)],
      ['reopened', `${issue.reopened} times`],
    ];
    byId('issue-facts').replaceChildren(
      ...facts.flatMap(([term, value]) => [el('dt', {}, term), el('dd', { 'data-issue-fact': term }, value)]),
    );
    byId('issue-error').textContent = issue.lastError || 'no error recorded';
    byId('issue-events').replaceChildren(
      ...events.map((e) =>
        el(
          'tr',
          { 'data-event-id': e.eventId, 'data-status': e.status },
          el('td', {}, e.eventId),
          el('td', {}, e.account),
          el('td', {}, e.eventType),
          el('td', {}, el('span', { class: `status status-${e.status}` }, e.status)),
          el('td', { class: 'num' }, e.attempts),
          el('td', {}, when(e.receivedAt)),
        ),
      ),
    );
    byId('issue-events-more').textContent =
      issue.affectedEvents > events.length ? `showing the first ${events.length} of ${issue.affectedEvents}` : '';
    byId('issue-acknowledge').disabled = issue.state !== 'open';
    byId('issue-replay').disabled = issue.unfinishedEvents === 0;
    byId('issue-resolve').disabled = issue.state === 'resolved';
    byId('issue-ignore').disabled = issue.state === 'ignored';
    if (focus) byId('issue-title').focus();
  }

  async function move(action) {
    const id = view.selected;
    try {
      const { issue } = await api(`/issues/${encodeURIComponent(id)}/${action}`, { method: 'POST', body: '{}' });
      byId('issues-notice').textContent = `issue #${id} is ${issue.state}`;
    } catch (err) {
      byId('issues-notice').textContent = `not changed: ${err.message}`;
    }
    await load();
    await show(id, false);
  }

  async function replay() {
    const id = view.selected;
    try {
      // Filtered by account: that account's affected events only (the issue is still marked resolved).
      const path = `/issues/${encodeURIComponent(id)}/replay`;
      const dry = await api(path, { method: 'POST', body: JSON.stringify({ dryRun: true, ...inAccount() }) });
      if (
        !confirm(
          `Replay the ${dry.count} affected events of issue #${id}${ofAccount()} that are not done, and mark it resolved? Do it once the cause is fixed.`,
        )
      )
        return;
      const done = await api(path, { method: 'POST', body: JSON.stringify(inAccount()) });
      byId('issues-notice').textContent = `${done.replayed} events of issue #${id}${ofAccount()} re-queued; it is ${done.state}`;
    } catch (err) {
      byId('issues-notice').textContent = `not replayed: ${err.message}`;
    }
    await load();
    await show(id, false);
  }

  function close() {
    view.selected = null;
    byId('issue-detail').hidden = true;
  }

  document.addEventListener('DOMContentLoaded', () => {
    build();
    // The page shows <main> once the token is given (console.js): load then, and every few seconds while it shows.
    new MutationObserver(() => load()).observe(byId('main'), { attributes: true, attributeFilter: ['hidden'] });
    setInterval(() => {
      const live = byId('live');
      if (!live || live.checked) load();
    }, POLL_MS);
    load();
  });
})();
