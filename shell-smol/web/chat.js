// Table chat and the list of spectators (PROTOCOL.md 6.4). Chat text is plain text:
// every line is put into the page with textContent (through text nodes), never as
// HTML. Each sender can be muted; the muted player ids are kept in localStorage.

const MUTED_KEY = 'wizard.muted';
const LINES_MAX = 100; // the server sends at most 50 lines of history
const MUTED_MAX = 200;

const $ = (id) => document.getElementById(id);

const C = {
  lines: [], // {from, name, text}, or {gap: n} for n lines the server left out
  senders: new Map(), // player_id -> name, for the mute list
  muted: new Set(),
  code: null, // the lobby the lines belong to
  sentAt: -Infinity, // performance.now() of our last chat line (to explain a rate_limited)
};

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function loadMuted() {
  try {
    const ids = JSON.parse(localStorage.getItem(MUTED_KEY) ?? '[]');
    if (Array.isArray(ids)) C.muted = new Set(ids.filter((x) => typeof x === 'string').slice(-MUTED_MAX));
  } catch {
    C.muted = new Set();
  }
}

function saveMuted() {
  try {
    localStorage.setItem(MUTED_KEY, JSON.stringify([...C.muted].slice(-MUTED_MAX)));
  } catch {
    /* private mode: the choice lasts for this page */
  }
}

/** Sets up the chat form; `send(msg)` sends a message, returns false when offline. */
export function initChat(send) {
  loadMuted();
  $('chat-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $('chat-input');
    const text = input.value.trim();
    if (!text) return;
    if (send({ type: 'chat', text })) {
      C.sentAt = performance.now();
      input.value = '';
    }
  });
}

/** Whether a `rate_limited` just now most likely answers our chat line. */
export function chatWasRefused() {
  return performance.now() - C.sentAt < 3000;
}

/** A new connection or another lobby: the history follows the state, so start afresh. */
export function resetChat(code = null) {
  C.lines = [];
  C.code = code;
  renderLines();
}

/** A `chat` frame. */
export function onChat(msg) {
  C.lines.push({ from: String(msg.from ?? ''), name: String(msg.name ?? ''), text: String(msg.text ?? '') });
  if (C.lines.length > LINES_MAX) C.lines.splice(0, C.lines.length - LINES_MAX);
  C.senders.set(String(msg.from ?? ''), String(msg.name ?? ''));
  renderLines();
}

/** A `chat_gap` frame: `missed` lines were left out here (a slow link during a burst,
 *  or a history replay cut short). Shown as one muted line in their place. */
export function onChatGap(msg) {
  const missed = Number(msg.missed);
  if (!Number.isSafeInteger(missed) || missed <= 0) return;
  C.lines.push({ gap: missed });
  if (C.lines.length > LINES_MAX) C.lines.splice(0, C.lines.length - LINES_MAX);
  renderLines();
}

/** The lobby changed: keeps the lines only while it is the same lobby. */
export function chatLobby(lobby) {
  const code = lobby?.code ?? null;
  if (code !== C.code) resetChat(code);
}

function renderLines() {
  const log = $('chat-log');
  if (!log) return;
  const shown = C.lines.filter((l) => l.gap || !C.muted.has(l.from));
  log.replaceChildren(...shown.map((l) => (l.gap
    ? el('li', { class: 'chat-gap muted', 'data-testid': 'chat-gap' },
      `${l.gap} chat ${l.gap === 1 ? 'message was' : 'messages were'} skipped.`)
    : el('li', { class: 'chat-line', 'data-testid': 'chat-line' },
      el('span', { class: 'chat-name' }, l.name), ': ',
      el('span', { class: 'chat-text' }, l.text)))));
  if (!shown.length) log.append(el('li', { class: 'chat-empty muted' }, 'No messages yet.'));
  log.scrollTop = log.scrollHeight;
}

/** The mute toggles (one per other human at the table or sender seen) and the
 *  spectators' names, for the lobby `lobby` and our player id `me`. */
export function renderAudience(lobby, me) {
  const people = new Map();
  for (const p of lobby?.players ?? []) if (!p.is_ai && p.id !== me) people.set(p.id, p.name);
  for (const [id, name] of C.senders) if (id !== me && !people.has(id)) people.set(id, name);
  const mutes = $('chat-mutes');
  mutes.replaceChildren(...[...people].map(([id, name]) => {
    const muted = C.muted.has(id);
    return el('li', {},
      el('button', {
        type: 'button', class: 'btn btn-small btn-ghost mute-btn', 'data-testid': `mute-${id}`,
        'aria-pressed': muted ? 'true' : 'false',
        onclick: () => {
          if (C.muted.has(id)) C.muted.delete(id);
          else C.muted.add(id);
          saveMuted();
          renderLines();
          renderAudience(lobby, me);
        },
      }, `${muted ? 'Unmute' : 'Mute'} ${name}`));
  }));
  $('chat-mutes-wrap').hidden = people.size === 0;
  const names = lobby?.spectators ?? [];
  for (const id of ['lobby-spectators', 'game-spectators']) {
    const list = $(id);
    list.replaceChildren(...names.map((n) => el('li', { class: 'spectator-name' }, eyeIcon(), n)));
    if (!names.length) list.append(el('li', { class: 'muted' }, 'Nobody is watching.'));
  }
  // Beside the table the panel is there only while someone watches.
  $('game-watching').hidden = names.length === 0;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An eye drawn in SVG (no font needs an emoji for it), labelled for screen readers
 *  (by aria-label only: the list item's text stays the name). */
function eyeIcon() {
  const svg = document.createElementNS(SVG_NS, 'svg');
  for (const [k, v] of Object.entries({
    class: 'eye-icon', viewBox: '0 0 24 16', width: '1.1em', height: '.75em', role: 'img', 'aria-label': 'Spectator',
  })) svg.setAttribute(k, v);
  const lid = document.createElementNS(SVG_NS, 'path');
  lid.setAttribute('d', 'M1 8C4 3 7.5 1 12 1s8 2 11 7c-3 5-6.5 7-11 7S4 13 1 8z');
  lid.setAttribute('fill', 'none');
  lid.setAttribute('stroke', 'currentColor');
  lid.setAttribute('stroke-width', '2');
  const pupil = document.createElementNS(SVG_NS, 'circle');
  for (const [k, v] of Object.entries({ cx: '12', cy: '8', r: '3.5', fill: 'currentColor' })) pupil.setAttribute(k, v);
  svg.append(lid, pupil);
  return svg;
}
