/**
 * The inbox's stylesheet and its one small script, served as files (the CSP allows no inline code). The
 * page works without the script (plain forms); the script adds live updates over server-sent events and
 * keeps a second click from sending a form twice.
 */

export const INBOX_CSS = `:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fff; --muted: #57606a; --line: #d0d7de;
  --ok: #1a7f37; --no: #cf222e; --warn: #9a6700; --mark: #fff8c5; --card: #f6f8fa; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1; --line: #30363d;
  --ok: #3fb950; --no: #f85149; --warn: #d29922; --mark: #4d3800; --card: #161b22; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header.top { display: flex; flex-wrap: wrap; justify-content: space-between; align-items: baseline; gap: .5rem;
  padding: .75rem 1rem; border-bottom: 1px solid var(--line); }
header.top h1 { font-size: 1.2rem; margin: 0; } header.top a { color: inherit; text-decoration: none; }
.who { margin: 0; color: var(--muted); font-size: .9rem; display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.who button.link { min-height: 32px; padding: .1rem .6rem; font-size: .85rem; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
.count { color: var(--muted); margin: 0 0 .5rem; }
.approval { border: 1px solid var(--line); border-radius: 8px; padding: 1rem; margin: 0 0 1rem; background: var(--card); }
.approval h2 { font-size: 1.15rem; margin: 0 0 .25rem; overflow-wrap: anywhere; }
.approval h3 { font-size: 1rem; margin: 1rem 0 .25rem; }
.canonical { color: var(--muted); font-weight: normal; font-size: .9rem; }
.state { margin: 0 0 .5rem; font-weight: 600; } .state.pending { color: var(--warn); }
.state.answered { color: var(--muted); } .outcome.allow { color: var(--ok); } .outcome.deny { color: var(--no); }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: .25rem 1rem; margin: 0; }
dl.facts div { min-width: 0; } dt { color: var(--muted); font-size: .85rem; } dd { margin: 0; overflow-wrap: anywhere; }
.none { color: var(--muted); }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: .5rem; margin: 0; font: 14px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; unicode-bidi: isolate; direction: ltr; }
mark.hidden-char { background: var(--mark); color: var(--fg); border: 1px dashed var(--warn); border-radius: 3px; padding: 0 2px; font-size: .85em; }
.warn { color: var(--warn); margin: 0 0 .25rem; }
details { margin: .75rem 0 0; } summary { cursor: pointer; }
form { margin: .75rem 0 0; } fieldset { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 .5rem; }
fieldset label { display: inline-block; margin-right: 1rem; }
label { display: block; margin: .25rem 0; }
textarea { width: 100%; font: inherit; padding: .4rem; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
textarea[name=arguments] { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.buttons { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: .5rem; align-items: center; }
button { font: inherit; min-height: 44px; padding: .4rem 1.1rem; border-radius: 6px; border: 1px solid var(--line);
  background: var(--bg); color: var(--fg); cursor: pointer; }
button.allow { background: var(--ok); border-color: var(--ok); color: #fff; }
button.deny { background: var(--no); border-color: var(--no); color: #fff; }
button:disabled { opacity: .6; cursor: progress; }
:focus-visible { outline: 3px solid #0969da; outline-offset: 2px; }
.diff ins, .diff del, .diff span.diff-same { display: block; text-decoration: none; }
.diff ins { background: rgba(26,127,55,.15); } .diff del { background: rgba(207,34,46,.15); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.message.error h2 { color: var(--no); } .message.ok h2 { color: var(--ok); }
.section { font-size: 1rem; color: var(--muted); margin: 1.5rem 0 .5rem; }
@media (max-width: 30rem) { main { padding: .5rem; } .approval { padding: .75rem; } .buttons button { flex: 1 1 auto; } }
`;

export const INBOX_JS = `'use strict';
(function () {
  var base = document.body.getAttribute('data-base') || '';
  // A form is sent once: its buttons are disabled on submit (the server refuses a second answer anyway).
  document.addEventListener('submit', function (event) {
    var form = event.target;
    if (form.dataset.sent === '1') { event.preventDefault(); return; }
    form.dataset.sent = '1';
    var submitter = event.submitter;
    setTimeout(function () {
      form.querySelectorAll('button').forEach(function (b) { if (b !== submitter) b.disabled = true; });
    }, 0);
  });
  var list = document.getElementById('approvals');
  if (!list || typeof EventSource !== 'function') return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(base + '/fragment', { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.text(); })
      .then(function (html) {
        var next = new DOMParser().parseFromString(html, 'text/html').getElementById('approvals');
        if (!next) return;
        merge(next);
      })
      .catch(function () {})
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  // Cards whose state did not change are kept as they are, so a half-typed reason survives an update.
  function merge(next) {
    var keep = {};
    list.querySelectorAll('article.approval').forEach(function (a) { keep[a.id] = a; });
    var focused = document.activeElement;
    var nodes = Array.prototype.slice.call(next.childNodes);
    var fresh = document.createDocumentFragment();
    nodes.forEach(function (node) {
      if (node.nodeType === 1 && node.matches('article.approval')) {
        var old = keep[node.id];
        if (old && old.getAttribute('data-state') === node.getAttribute('data-state')) { fresh.appendChild(old); return; }
      }
      fresh.appendChild(document.adoptNode(node));
    });
    list.replaceChildren(fresh);
    if (focused && document.contains(focused)) focused.focus();
  }
  var source = new EventSource(base + '/events');
  source.addEventListener('changed', refresh);
})();
`;
