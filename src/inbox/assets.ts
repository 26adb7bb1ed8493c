/**
 * The inbox's stylesheet and its one small script, served as files (the CSP allows no inline code). The
 * page works without the script (plain forms, full pages); the script adds, as progressive enhancement:
 * live updates over server-sent events (a refresh on every `ready`, so a reconnect catches up, and a note
 * while the stream is down), answering in place, the tab title's count, a live region that announces a
 * summary ("2 new approvals"), local absolute times, countdowns that turn a card expired, a confirmation
 * before remembering an approval for the session, and single submission.
 */

export const INBOX_CSS = `:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fff; --muted: #57606a; --line: #d0d7de;
  --ok: #1a7f37; --no: #cf222e; --warn: #7d5400; --mark: #fff8c5; --card: #f6f8fa; --focus: #0969da;
  --ok-bg: #1a7f37; --no-bg: #cf222e; --mid-bg: #7d5400; --low-bg: #57606a; --link: #0550ae; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #3d444d;
  --ok: #3fb950; --no: #ff7b72; --warn: #d29922; --mark: #4d3800; --card: #161b22; --focus: #4493f8;
  --ok-bg: #238636; --no-bg: #da3633; --mid-bg: #8a5a00; --low-bg: #4d555e; --link: #4493f8; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--link); }
.skip { position: absolute; left: -999px; top: 0; background: var(--bg); padding: .5rem; z-index: 2; }
.skip:focus { left: .5rem; }
header.top { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: center; gap: .25rem .75rem;
  padding: .5rem 1rem; border-bottom: 1px solid var(--line); }
header.top h1 { font-size: 1.1rem; margin: 0; } header.top h1 a { color: inherit; text-decoration: none; }
.views { display: flex; gap: .75rem; font-size: .95rem; }
.who { margin: 0; color: var(--muted); font-size: .9rem; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.who button.link { min-height: 32px; padding: .1rem .6rem; font-size: .85rem; }
.live-status { margin: 0; padding: .4rem 1rem; background: var(--mark); color: var(--fg); border-bottom: 1px solid var(--warn); }
main { max-width: 60rem; margin: 0 auto; padding: .75rem 1rem; }
main:focus { outline: none; }
.count { color: var(--muted); margin: .25rem 0 .5rem; }
.approval { border: 1px solid var(--line); border-left: 6px solid var(--line); border-radius: 8px; padding: .75rem 1rem; margin: 0 0 1rem; background: var(--card); }
.approval.risk-high { border-left-color: var(--no-bg); } .approval.risk-medium { border-left-color: var(--mid-bg); }
.approval.risk-low { border-left-color: var(--low-bg); }
.approval .head { display: flex; flex-wrap: wrap; align-items: baseline; gap: .25rem .6rem; }
.approval h2.summary { font-size: 1.2rem; margin: 0; overflow-wrap: anywhere; }
.approval h3 { font-size: 1rem; margin: .75rem 0 .25rem; }
.risk { display: inline-block; font-size: .8rem; font-weight: 700; padding: .05rem .5rem; border-radius: 1rem; color: #fff; white-space: nowrap; }
.risk-high .risk, .risk.risk-high { background: var(--no-bg); } .risk.risk-medium { background: var(--mid-bg); } .risk.risk-low { background: var(--low-bg); }
.tool { margin: .15rem 0; color: var(--muted); overflow-wrap: anywhere; } .tool strong { color: var(--fg); }
.tool.differs { color: var(--fg); } .tool.differs .canonical { background: var(--mark); padding: 0 .25rem; border-radius: 3px; }
.state { margin: .15rem 0 .25rem; font-weight: 600; } .state.pending { color: var(--warn); }
.state.answered.allowed { color: var(--ok); } .state.answered.denied, .state.expired { color: var(--no); }
.outcome.allow { color: var(--ok); } .outcome.deny, .outcome.error { color: var(--no); }
.cannot { color: var(--warn); font-weight: 600; margin: .25rem 0; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); gap: .25rem 1rem; margin: .75rem 0 0; }
dl.facts div { min-width: 0; } dt { color: var(--muted); font-size: .85rem; } dd { margin: 0; overflow-wrap: anywhere; }
.none { color: var(--muted); }
table.args-table { border-collapse: collapse; width: 100%; table-layout: fixed; }
.args-table th, .args-table td { text-align: left; vertical-align: top; padding: .2rem .5rem .2rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
.args-table th { width: 30%; color: var(--muted); font-weight: 600; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: .5rem; margin: 0; font: 14px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; unicode-bidi: isolate; direction: ltr; }
td pre { padding: .25rem; }
mark.hidden-char { background: var(--mark); color: var(--fg); border: 1px dashed var(--warn); border-radius: 3px; padding: 0 2px; font-size: .85em; }
.warn { color: var(--warn); margin: .25rem 0; }
details { margin: .5rem 0 0; } summary { cursor: pointer; min-height: 32px; }
form { margin: .5rem 0 0; } fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0; }
fieldset label { display: inline-block; margin-right: 1rem; }
.note { color: var(--muted); font-size: .85rem; margin: .25rem 0 0; }
.confirm-session { border: 2px solid var(--warn); border-radius: 6px; padding: .5rem .75rem; margin: .5rem 0; background: var(--bg); }
label { display: block; margin: .25rem 0; }
textarea, input, select { font: inherit; padding: .35rem; border: 1px solid var(--muted); border-radius: 6px; background: var(--bg); color: var(--fg); }
textarea { width: 100%; }
textarea[name=arguments] { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.buttons { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: .25rem; align-items: center; }
button { font: inherit; min-height: 44px; padding: .4rem 1.1rem; border-radius: 6px; border: 1px solid var(--muted);
  background: var(--bg); color: var(--fg); cursor: pointer; }
button.allow { background: var(--ok-bg); border-color: var(--ok-bg); color: #fff; font-weight: 600; }
button.deny { background: var(--no-bg); border-color: var(--no-bg); color: #fff; }
button:disabled { opacity: .6; cursor: progress; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.diff ins, .diff del, .diff span.diff-same { display: block; text-decoration: none; }
.diff ins { background: rgba(26,127,55,.18); } .diff del { background: rgba(207,34,46,.18); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.message { border-radius: 6px; padding: .25rem .75rem; margin: 0 0 .75rem; border: 1px solid var(--line); background: var(--card); }
.message h2 { font-size: 1.1rem; margin: .25rem 0; }
.message.error h2, .message.denied h2 { color: var(--no); } .message.ok h2 { color: var(--ok); }
.section { font-size: 1rem; color: var(--muted); margin: 1.5rem 0 .5rem; display: flex; gap: 1rem; align-items: baseline; }
.more-link { font-size: .9rem; font-weight: normal; }
.filters { margin: 0 0 .5rem; } .filter-form { display: flex; flex-wrap: wrap; gap: .25rem 1rem; align-items: flex-end; }
.filter-form label { margin: 0; } .filter-form input[type=number] { width: 5rem; }
.list.compact .approval { display: grid; grid-template-columns: minmax(0, 1fr) auto; column-gap: 1rem; align-items: center;
  padding: .4rem .75rem; margin-bottom: .4rem; }
.list.compact .approval > * { grid-column: 1; margin-top: 0; margin-bottom: 0; }
.list.compact .approval h2.summary { font-size: 1.05rem; }
.list.compact .approval .tool, .list.compact .approval .state { font-size: .9rem; }
.list.compact .approval > form.answer { grid-column: 2; grid-row: 1 / span 3; margin: 0; }
.list.compact .approval > details.more { grid-column: 1 / -1; margin-top: .1rem; }
.list.compact .approval form.answer > label, .list.compact .approval form.answer textarea,
.list.compact .approval form.answer fieldset { display: none; }
.list.compact .approval form.answer .buttons { margin: 0; flex-wrap: nowrap; }
.list.compact .approval form.answer button { min-height: 36px; padding: .2rem .8rem; }
@media (max-width: 30rem) { .list.compact .approval { grid-template-columns: minmax(0, 1fr); }
  .list.compact .approval > form.answer { grid-column: 1; grid-row: auto; margin-top: .25rem; } }
table.history { border-collapse: collapse; width: 100%; }
.history th, .history td { text-align: left; vertical-align: top; padding: .35rem .5rem .35rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
.history .sub { color: var(--muted); font-size: .85rem; }
.history tr.allowed td:last-child { color: var(--ok); } .history tr.denied td:last-child, .history tr.refused td:last-child { color: var(--no); }
.review { border-top: 1px solid var(--line); margin-top: .5rem; padding-top: .5rem; }
@media (max-width: 30rem) { main { padding: .5rem; } .approval { padding: .6rem; } .buttons button { flex: 1 1 auto; }
  header.top { padding: .4rem .5rem; } .who span { display: none; } }
`;

export const INBOX_JS = `'use strict';
(function () {
  var base = document.body.getAttribute('data-base') || '';
  var flash = document.getElementById('flash');
  var announce = document.getElementById('announce');
  var liveStatus = document.getElementById('live-status');
  var list = document.getElementById('approvals');
  // Deadlines are the server's: its clock, read from the page, corrects this one.
  var skew = 0;
  function clock() { var n = list && Number(list.getAttribute('data-now')); if (n) skew = n - Date.now(); }
  function now() { return Date.now() + skew; }
  clock();

  function tell(kind, title, detail) {
    if (!flash) return;
    flash.className = 'message ' + kind;
    flash.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    flash.replaceChildren();
    var h = document.createElement('h2'); h.textContent = title;
    var p = document.createElement('p'); p.textContent = detail;
    flash.appendChild(h); flash.appendChild(p);
    flash.hidden = false;
  }

  // Absolute times in the reader's own zone (the page says UTC without script).
  function localTimes(root) {
    root.querySelectorAll('time[datetime]').forEach(function (t) {
      var d = new Date(t.getAttribute('datetime'));
      if (isNaN(d.getTime())) return;
      t.title = t.getAttribute('datetime');
      t.textContent = d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
    });
  }
  function inText(ms) {
    var s = Math.round((ms - now()) / 1000);
    if (s <= 0) return 'expired';
    if (s < 120) return 'in ' + s + ' s';
    if (s < 7200) return 'in ' + Math.round(s / 60) + ' min';
    return 'in ' + Math.round(s / 3600) + ' h';
  }
  // A card whose deadline passes while it is open turns expired and loses its buttons.
  function tick() {
    document.querySelectorAll('article.approval.pending').forEach(function (a) {
      var ms = Number(a.getAttribute('data-expires'));
      var c = a.querySelector('.countdown');
      if (c) c.textContent = inText(ms);
      if (ms > now()) return;
      a.classList.remove('pending'); a.classList.add('expired');
      if (list) list.setAttribute('data-waiting', String(Math.max(0, Number(list.getAttribute('data-waiting')) - 1)));
      a.setAttribute('data-state', 'expired');
      a.querySelectorAll('form.answer, details.edit, .confirm-session, .review').forEach(function (f) { f.remove(); });
      var st = a.querySelector('.state');
      if (st) { st.className = 'state expired'; st.textContent = 'Expired · denied, the model is told'; }
    });
    counts();
  }

  function pendingIds() {
    var ids = [];
    document.querySelectorAll('article.approval.pending').forEach(function (a) { ids.push(a.getAttribute('data-id')); });
    return ids;
  }
  var known = {};
  pendingIds().forEach(function (id) { known[id] = true; });
  // The tab title and the list's count say how many wait now.
  function counts() {
    if (!list) return;
    var total = Number(list.getAttribute('data-waiting'));
    if (!isNaN(total)) document.title = 'Approvals (' + total + ') · toolgate';
  }
  // The live region announces a summary of what is new, not the whole list.
  function announceNew() {
    var fresh = [];
    pendingIds().forEach(function (id) { if (!known[id]) fresh.push(id); });
    var now = {};
    pendingIds().forEach(function (id) { now[id] = true; });
    known = now;
    if (fresh.length === 0 || !announce) return;
    if (fresh.length === 1) {
      var h = document.querySelector('#a-' + CSS.escape(fresh[0]) + ' h2');
      announce.textContent = '1 new approval: ' + (h ? h.textContent : '');
    } else announce.textContent = fresh.length + ' new approvals';
  }

  var busy = false, again = false;
  function refresh() {
    if (!list) return;
    if (busy) { again = true; return; }
    busy = true;
    fetch(base + '/fragment' + location.search, { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, 'text/html').getElementById('approvals');
        if (next) merge(next);
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  // Cards whose state did not change are kept as they are, so a half-typed reason survives an update.
  function merge(next) {
    var keep = {};
    list.querySelectorAll('article.approval').forEach(function (a) { keep[a.id] = a; });
    var openFilters = list.querySelector('details.filters');
    var focused = document.activeElement;
    var fresh = document.createDocumentFragment();
    Array.prototype.slice.call(next.childNodes).forEach(function (node) {
      if (node.nodeType === 1 && node.matches('article.approval')) {
        var old = keep[node.id];
        if (old && old.getAttribute('data-state') === node.getAttribute('data-state')) { fresh.appendChild(old); return; }
      }
      if (node.nodeType === 1 && node.matches('details.filters') && openFilters) { fresh.appendChild(openFilters); return; }
      fresh.appendChild(document.adoptNode(node));
    });
    list.replaceChildren(fresh);
    list.setAttribute('data-waiting', next.getAttribute('data-waiting') || '0');
    list.setAttribute('data-now', next.getAttribute('data-now') || '');
    clock();
    localTimes(list);
    if (focused && document.contains(focused)) focused.focus();
    announceNew();
    counts();
  }

  function setLive(on, text) {
    document.body.setAttribute('data-live', on ? 'on' : 'off');
    if (!liveStatus) return;
    liveStatus.hidden = on;
    if (!on) liveStatus.textContent = text || 'Live updates paused: reconnecting…';
  }
  function connect() {
    if (!list || typeof EventSource !== 'function') return;
    var source = new EventSource(base + '/events');
    // Every (re)connect starts with ready: what changed while the stream was away is fetched then.
    source.addEventListener('ready', function () { setLive(true); refresh(); });
    source.addEventListener('changed', refresh);
    source.onerror = function () {
      if (source.readyState === 2) {
        setLive(false, 'Live updates stopped: reconnecting…');
        setTimeout(connect, 5000);
      } else setLive(false);
    };
  }

  function submitterOf(event, form) {
    return event.submitter || form.querySelector('button[type=submit]');
  }
  function sessionConfirm(form, submitter) {
    var chosen = form.querySelector('input[name=remember]:checked');
    if (!chosen || chosen.value !== 'session' || !submitter || submitter.value !== 'allow') return false;
    if (form.dataset.confirmed === '1') return false;
    var box = form.querySelector('.confirm-session');
    if (!box) return false;
    box.hidden = false;
    var yes = box.querySelector('.confirm-yes'), no = box.querySelector('.confirm-no');
    yes.onclick = function () { form.dataset.confirmed = '1'; box.hidden = true; form.requestSubmit(submitter); };
    no.onclick = function () { box.hidden = true; submitter.focus(); };
    yes.focus();
    return true;
  }

  // Answering in place: the form is sent by fetch, the outcome shown above the list, the list refreshed.
  function inPlace(form, submitter) {
    var data = new FormData(form);
    if (submitter && submitter.name) data.append(submitter.name, submitter.value);
    form.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    var edit = form.classList.contains('edit-form');
    return fetch(form.action, {
      method: 'POST', body: new URLSearchParams(data), credentials: 'same-origin',
      headers: { 'x-toolgate-inbox': 'in-place' }
    }).then(function (r) {
      if (edit && r.ok) return r.text().then(function (html) {
        var review = new DOMParser().parseFromString(html, 'text/html').querySelector('.review');
        var card = form.closest('article.approval');
        if (!review || !card) throw new Error('no review');
        var old = card.querySelector('.review'); if (old) old.remove();
        card.appendChild(document.adoptNode(review));
        var b = review.querySelector('button'); if (b) b.focus();
        form.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      });
      return r.json().then(function (o) {
        var kind = r.ok ? (/^Denied/.test(o.title) ? 'denied' : 'ok') : 'error';
        tell(kind, o.title, o.detail);
        refresh();
      });
    }).catch(function () {
      form.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      tell('error', 'Not sent', 'The answer could not be sent; try again.');
    });
  }

  document.addEventListener('submit', function (event) {
    var form = event.target;
    var submitter = submitterOf(event, form);
    if (form.matches('form.answer') && sessionConfirm(form, submitter)) { event.preventDefault(); return; }
    if (form.dataset.sent === '1') { event.preventDefault(); return; }
    if (list && list.contains(form) && (form.matches('form.answer') || form.matches('form.edit-form')) && window.fetch) {
      event.preventDefault();
      form.dataset.sent = form.classList.contains('edit-form') ? '' : '1';
      inPlace(form, submitter);
      return;
    }
    // A form is sent once: its buttons are disabled on submit (the server refuses a second answer anyway).
    form.dataset.sent = '1';
    setTimeout(function () {
      form.querySelectorAll('button').forEach(function (b) { if (b !== submitter) b.disabled = true; });
    }, 0);
  });

  localTimes(document);
  counts();
  setInterval(tick, 1000);
  connect();
})();
`;
