// The Wizard browser client: home, lobby, game table and end screen, driven entirely by
// the server's `state` messages. It never decides what is legal: every clickable card,
// bid and trump suit comes from `game.observation.legal_actions`.

import { Connection } from './net.js';
import {
  adoptKeyLink, changeText, initProfile, onProfileMessage, profileKey, ratingText, refreshProfile,
  renderProfileCard, seenRating, signedIn,
} from './profile.js';
import { pageFromUrl, showPage } from './pages.js';
import { initReplay, openReplay } from './replay.js';
import { initAlerts, setMyTurn } from './alerts.js';
import { chatLobby, chatWasRefused, initChat, onChat, onChatGap, renderAudience, resetChat } from './chat.js';
import {
  SUITS, SUIT_BY_NAME, cardFace, cardName, cardShort, parseCard, sortHand, suitBadge,
} from './cards.js';

const NAME_KEY = 'wizard.name';
const LOG_MAX = 40;
const TOAST_MS = 4000;
// A completed trick stays in the middle, then sweeps towards its winner (CSS `sweep`).
const SWEEP_DELAY_MS = 900;
const SWEEP_MS = 500;

const $ = (id) => document.getElementById(id);

/** Everything the client knows; rebuilt from the server's messages. */
const S = {
  me: null, // our player_id
  status: { load: 'normal', accepting_games: true },
  lobby: null,
  game: null,
  connected: false,
  everConnected: false,
  replaced: false,
  pending: false, // an action was sent and no state answered it yet
  deadline: null, // performance.now() when the turn timer runs out
  log: [], // {text, kind}
  shownTrick: null, // the trick just completed, shown in the middle until the next card
  roundEndTrick: null, // the previous round's last trick {cards, winner, round}, for the side panel
  ranking: null, // from game_finished, in case the observation lacks it
  seenTrick: new Set(), // cards already drawn in the middle (to animate only new ones)
  unannounced: [], // log lines not yet read out to screen readers
  playFocus: false, // the keyboard was in the hand or the action bar
  retryAt: null,
  busyUntil: 0, // performance.now() before which create/start stay disabled (busy's retry_after_ms)
  view: null,
  joinFromLink: null,
  watchFromLink: null,
  watching: null, // {code, name} while we watch a table without a seat
  rewatch: false, // a new connection: watch again what we watched (spectating is per connection)
  queued: null, // {seats, since: performance.now() when queued} while we wait for a quick-play table
  requeue: false, // a new connection: queue again (a ticket goes with its connection)
  tables: null, // the last `tables` answer
};

// ---------------------------------------------------------------- helpers

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'style') el.setAttribute('style', v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** `el.replaceChildren` without the null/false holes of conditional children. */
function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

/** `fill(el, ...build())` unless `key` (JSON-able) is what `el` was last filled for. A
 *  button that stays the same is not replaced: a click whose press and release straddle
 *  a state (another seat's move under hidden bids) still reaches it. */
function fillKeyed(el, key, build) {
  const k = JSON.stringify(key);
  if (el.dataset.key === k) return;
  fill(el, ...build());
  el.dataset.key = k;
}

function send(msg) {
  if (!conn.send(msg)) {
    toast('Not connected to the server yet. Reconnecting...');
    return false;
  }
  return true;
}

let toastTimer = null;
function toast(text, ms = TOAST_MS) {
  const el = $('toast');
  el.textContent = text;
  el.hidden = false;
  el.classList.remove('toast-show');
  void el.offsetWidth;
  el.classList.add('toast-show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    el.hidden = true;
  }, ms);
}

function players() {
  return S.lobby?.players ?? [];
}

function seatName(seat) {
  const g = S.game;
  if (g && seat === g.you) return 'You';
  return players()[seat]?.name ?? `Seat ${seat + 1}`;
}

/** Whether we watch the lobby without a seat. */
function spectating() {
  return !!S.lobby && !S.lobby.players.some((p) => p.id === S.me);
}

function isHost() {
  return !!S.lobby && S.lobby.host_id === S.me;
}

function suitText(suitName) {
  const s = SUIT_BY_NAME[suitName];
  return s ? `${s.symbol} ${suitName}` : 'no trump';
}

function verb(seat, youForm, otherForm) {
  return S.game && seat === S.game.you ? youForm : otherForm;
}

/** Remembers which control had focus, to give it back after a re-render. */
function focusKey() {
  const a = document.activeElement;
  if (!a || a === document.body) return null;
  return a.dataset?.testid ? `[data-testid="${a.dataset.testid}"]` : a.id ? `#${a.id}` : null;
}

function restoreFocus(key) {
  if (!key) return;
  const a = document.activeElement;
  if (a && a !== document.body && document.contains(a)) return;
  const el = document.querySelector(key);
  if (el && !el.disabled && !el.closest('[hidden]')) el.focus({ preventScroll: true });
}

// ---------------------------------------------------------------- messages

function onMessage(msg) {
  switch (msg.type) {
    case 'welcome':
      S.me = msg.player_id;
      S.rewatch = !!S.watching;
      // A ticket matched on another shard is not queued again: its table waits there.
      S.requeue = !!S.queued && !S.queued.matched;
      resetChat();
      if (msg.name && !$('name-input').value) $('name-input').value = msg.name;
      onProfileMessage(msg);
      break;
    case 'profile':
    case 'profile_deleted':
      onProfileMessage(msg);
      if (msg.type === 'profile' && !$('name-input').value) $('name-input').value = msg.name;
      break;
    case 'server_status':
      S.status = { load: msg.load, accepting_games: !!msg.accepting_games };
      // A change of status is newer news than an earlier busy's wait.
      if (S.status.accepting_games) S.busyUntil = 0;
      render();
      break;
    case 'state':
      onState(msg);
      break;
    case 'error':
      onError(msg);
      break;
    case 'chat':
      onChat(msg);
      break;
    case 'chat_gap':
      onChatGap(msg);
      break;
    case 'queued':
      if (S.queued && S.queued.since == null) S.queued.since = performance.now();
      render();
      break;
    case 'matched':
      // The connection follows it to the table's shard (net.js); the waiting view stays.
      if (S.queued) S.queued.matched = true;
      break;
    case 'tables':
      S.tables = msg.tables ?? [];
      render();
      break;
    default:
      break;
  }
}

function onState(msg) {
  const hadGame = !!S.game;
  S.everConnected = true; // the first state decides the first view (no flash of home)
  S.lobby = msg.lobby;
  S.game = msg.game;
  S.pending = false;
  chatLobby(S.lobby);
  if (S.lobby && spectating()) S.watching = { code: S.lobby.code, name: S.watching?.name ?? '' };
  else if (S.lobby) S.watching = null;
  if (!S.lobby && S.watching) {
    // Reconnected: watch the same table again; otherwise the watching has ended.
    if (S.rewatch) send({ type: 'spectate', code: S.watching.code, name: S.watching.name || 'Guest' });
    else S.watching = null;
  }
  S.rewatch = false;
  if (S.lobby) S.queued = null;
  else if (S.requeue && S.queued) {
    // Reconnected while waiting: the ticket went with the old connection.
    S.queued.since = null;
    send({ type: 'quick_play', name: S.queued.name, seats: S.queued.seats });
  }
  S.requeue = false;
  if (!S.game) {
    S.shownTrick = null;
    S.roundEndTrick = null;
    S.ranking = null;
    if (hadGame) S.log = [];
  }
  const obs = S.game?.observation;
  S.deadline = obs && obs.turn_deadline_ms != null ? performance.now() + obs.turn_deadline_ms : null;
  for (const ev of msg.events ?? []) onEvent(ev);
  if (obs && obs.trick.length > 0) S.shownTrick = null;
  if (S.lobby && (S.joinFromLink || S.watchFromLink)) {
    S.joinFromLink = null;
    S.watchFromLink = null;
    history.replaceState(null, '', '/');
  }
  render();
}

function onEvent(ev) {
  const n = (p) => seatName(p);
  switch (ev.type) {
    case 'round_started': {
      // The previous round's last trick came with this event: the table is cleared at
      // once (the first bidder may be asked straight away, and only AI seats wait for
      // TRICK_PAUSE); the side panel shows that trick until one is won in this round.
      S.seenTrick.clear();
      S.roundEndTrick = S.shownTrick ? { cards: S.shownTrick.cards, winner: S.shownTrick.winner, round: ev.round - 1 } : null;
      S.shownTrick = null;
      let trump;
      if (!ev.trump_card) trump = 'no trump (all cards dealt)';
      else if (parseCard(ev.trump_card).kind === 'wizard') trump = `a Wizard was turned, ${n(ev.dealer)} ${verb(ev.dealer, 'choose', 'chooses')} trump`;
      else if (parseCard(ev.trump_card).kind === 'jester') trump = 'a Jester was turned: no trump';
      else trump = `trump is ${suitText(ev.trump_suit)}`;
      addLog(`Round ${ev.round}: ${n(ev.dealer)} ${verb(ev.dealer, 'deal', 'deals')}, ${trump}.`, 'round');
      break;
    }
    case 'trump_chosen':
      addLog(`${n(ev.player)} chose ${suitText(ev.suit)} as trump.`);
      break;
    case 'bid_made':
      if (ev.bid === undefined || ev.bid === null) addLog(`${n(ev.player)} ${verb(ev.player, 'have', 'has')} bid.`);
      else addLog(`${n(ev.player)} bid ${ev.bid}.`);
      break;
    case 'bids_revealed':
      addLog(`Bids revealed: ${(ev.bids ?? []).map((b, i) => `${n(i)} ${b}`).join(', ')}.`);
      break;
    case 'card_played':
      addLog(`${n(ev.player)} played ${cardShort(ev.card)}.`, 'minor');
      break;
    case 'trick_completed':
      S.shownTrick = { cards: ev.cards, winner: ev.winner, at: performance.now() };
      addLog(`${n(ev.winner)} won the trick.`, 'trick');
      break;
    case 'round_finished': {
      const parts = (ev.deltas ?? []).map((d, i) => `${n(i)} ${d > 0 ? '+' : ''}${d}`);
      addLog(`Round over: ${parts.join(', ')}.`, 'round');
      break;
    }
    case 'game_finished': {
      S.ranking = ev.ranking ?? null;
      const first = (ev.ranking ?? []).filter((r) => r.place === 1).map((r) => n(r.player));
      if (first.length) addLog(`Game over: ${first.join(' and ')} ${first.length > 1 || first[0] === 'You' ? 'win' : 'wins'}!`, 'round');
      break;
    }
    case 'autoplayed':
      addLog(`Time ran out: the server moved for ${seatName(ev.player) === 'You' ? 'you' : seatName(ev.player)}.`, 'warn');
      break;
    default:
      break;
  }
}

function addLog(text, kind = '') {
  S.log.push({ text, kind });
  S.unannounced.push(text);
  if (S.log.length > LOG_MAX) S.log.splice(0, S.log.length - LOG_MAX);
}

function onError(msg) {
  S.pending = false;
  switch (msg.code) {
    case 'rate_limited':
      toast(chatWasRefused() ? 'You are sending chat messages too fast. Wait a moment.' : 'Too many messages, slow down.');
      break;
    case 'busy': {
      // Before `welcome` this is the connection limit: the 1013 close and its banner follow.
      if (!S.connected) break;
      const waitMs = Number.isFinite(msg.retry_after_ms) ? msg.retry_after_ms : 60000;
      // A refused quick_play keeps no ticket: back to Play now.
      S.queued = null;
      S.busyUntil = performance.now() + waitMs;
      setTimeout(render, waitMs + 50);
      toast(`The server is busy right now, so no new game can start. Please try again in ${Math.ceil(waitMs / 1000)} s.`);
      break;
    }
    case 'removed':
      toast('The host removed you from the lobby.');
      break;
    case 'session_replaced':
      break; // the close with 4000 follows
    case 'not_found':
      toast(S.lobby ? msg.message || 'Not found.' : 'There is no lobby with that code.');
      break;
    default:
      toast(msg.message || `Error: ${msg.code}`);
  }
  render();
}

function onStatus(status, detail) {
  const line = $('conn-status');
  const banner = $('server-full-banner');
  S.connected = status === 'open';
  if (status === 'open') {
    banner.hidden = true;
    line.textContent = '';
    line.className = 'conn-status';
  } else if (status === 'full') {
    banner.hidden = false;
    S.retryAt = performance.now() + detail;
    $('server-full-detail').textContent = `(next try in ${Math.round(detail / 1000)} s)`;
    $('connecting-text').textContent = 'Waiting for a free place on the server...';
    line.textContent = 'Waiting for a free place';
    line.className = 'conn-status conn-bad';
  } else if (status === 'replaced') {
    S.replaced = true;
    $('replaced-banner').hidden = false;
    line.textContent = 'Disconnected';
    line.className = 'conn-status conn-bad';
  } else if (status === 'reconnecting') {
    line.textContent = detail ? `Connection lost, reconnecting in ${Math.max(1, Math.round(detail / 1000))} s...` : 'Reconnecting...';
    line.className = 'conn-status conn-warn';
  } else {
    line.textContent = 'Connecting...';
    line.className = 'conn-status conn-warn';
  }
  render();
}

// ---------------------------------------------------------------- rendering

function render() {
  const key = focusKey();
  let view;
  if (!S.everConnected) view = 'connecting';
  else if (!S.lobby) view = 'home';
  else if (S.lobby.status === 'waiting' || !S.game) view = 'lobby';
  else view = 'game';
  for (const v of ['home', 'lobby', 'game', 'connecting']) $(`view-${v}`).hidden = v !== view;
  if (S.replaced && !S.connected) $('connecting-text').textContent = 'This game was opened in another window.';
  const changed = view !== S.view;
  S.view = view;
  document.body.dataset.view = view;
  if (view === 'home') renderHome();
  if (view === 'home' && changed) refreshProfile();
  if (view === 'lobby') renderLobby();
  if (view === 'game') renderGame();
  else setMyTurn(false);
  renderChatPanel(view);
  if (changed) {
    const heading = { home: 'home-title', lobby: 'lobby-title' }[view];
    if (view === 'home' && !$('name-input').value) $('name-input').focus();
    else if (view === 'home' && S.joinFromLink) $('join-lobby').focus();
    else if (view === 'home' && S.watchFromLink) $('watch-lobby').focus();
    else if (heading && (key === null || !document.querySelector(key) || document.querySelector(key).closest('[hidden]'))) {
      $(heading).setAttribute('tabindex', '-1');
      $(heading).focus({ preventScroll: true });
    }
  } else {
    restoreFocus(key);
  }
  if (view === 'game') keepPlayFocus();
}

/** Keyboard play: after a bid or a card the focused button goes away; when the next
 *  choice appears, focus moves to it, so Enter/Tab is all a keyboard player needs. */
function keepPlayFocus() {
  const a = document.activeElement;
  const inPlay = a && (a.closest('#hand') || a.closest('#action-bar'));
  if (inPlay && !a.disabled) {
    S.playFocus = true;
    return;
  }
  if (!S.playFocus || (a && a !== document.body && !inPlay)) {
    S.playFocus = false;
    return;
  }
  const next = document.querySelector('#action-bar button:not(:disabled), #hand button:not(:disabled)');
  if (next) next.focus({ preventScroll: true });
}

/** Whether the server accepts new games now, as far as the client knows: its status,
 * and no `busy` whose retry_after_ms has not yet passed. */
function acceptingGames() {
  return S.status.accepting_games && performance.now() >= S.busyUntil;
}

function renderQuick() {
  const waiting = !!S.queued;
  $('quick-waiting').hidden = !waiting;
  $('play-now-card').hidden = waiting;
  const accepting = acceptingGames();
  $('play-now').disabled = !accepting || !S.connected;
  if (waiting) {
    const secs = S.queued.since == null ? 0 : Math.floor((performance.now() - S.queued.since) / 1000);
    $('quick-waited').textContent = `${secs} s`;
  }
  const list = $('tables-list');
  const tables = S.tables ?? [];
  $('tables-empty').hidden = S.tables === null || tables.length > 0;
  fill(list, ...tables.map((t) => {
    const open = t.status === 'waiting';
    const label = `${t.host}'s table, ${t.seats} of ${t.max_seats} seats${open ? '' : ', playing'}`;
    const button = h('button', {
      type: 'button', class: 'btn btn-small', 'data-testid': `table-${t.code}`,
      onclick: () => {
        const name = nameValue();
        if (!name) return;
        if (open) send({ type: 'join_lobby', code: t.code, name });
        else {
          S.watching = { code: t.code, name };
          send({ type: 'spectate', code: t.code, name });
        }
      },
    }, open ? 'Join' : 'Watch');
    return h('li', { class: 'table-row' }, h('span', { class: 'table-name' }, label), button);
  }));
}

function renderHome() {
  renderQuick();
  renderProfileCard();
  $('create-profile').disabled = !S.connected;
  const accepting = acceptingGames();
  $('busy-notice').hidden = accepting;
  const create = $('create-lobby');
  create.disabled = !accepting || !S.connected;
  create.title = accepting ? '' : 'The server is busy: new games cannot be created right now.';
  $('join-lobby').disabled = !S.connected;
  $('watch-lobby').disabled = !S.connected;
}

/** The chat panel goes into the lobby or the game view; the spectators' lists and the
 *  mute toggles follow the lobby. */
function renderChatPanel(view) {
  const panel = $('chat-panel');
  const slot = { lobby: 'lobby-chat-slot', game: 'game-chat-slot' }[view];
  panel.hidden = !slot;
  if (!slot) return;
  if (panel.parentElement?.id !== slot) $(slot).append(panel);
  renderAudience(S.lobby, S.me);
}

/** What the lobby shows for an AI seat's level (PROTOCOL.md 6.5; absent is strong). */
const LEVEL_NAMES = { easy: 'Easy', normal: 'Normal', strong: 'Strong' };

function renderLobby() {
  const l = S.lobby;
  const host = isHost();
  $('lobby-code').textContent = l.code;
  $('share-link').value = `${location.origin}/?join=${l.code}`;
  $('watch-link').value = `${location.origin}/?watch=${l.code}`;
  $('spectating-note').hidden = !spectating();
  $('seat-count').textContent = `(${l.players.length} of ${l.max_players ?? 6})`;
  const seats = $('seats');
  fill(seats,
    ...l.players.map((p) => {
      const badges = [];
      if (p.id === l.host_id) badges.push(h('span', { class: 'badge badge-host' }, 'Host'));
      if (p.id === S.me) badges.push(h('span', { class: 'badge badge-you' }, 'You'));
      if (p.is_ai) badges.push(h('span', { class: 'badge badge-ai' }, 'AI'));
      if (p.is_ai) {
        const level = LEVEL_NAMES[p.level] ?? LEVEL_NAMES.strong;
        badges.push(h('span', { class: 'badge badge-level', 'data-testid': `level-${p.id}` }, level));
      }
      if (!p.connected && !p.is_ai) badges.push(h('span', { class: 'badge badge-off' }, 'Offline'));
      if (p.rating != null) {
        // A profile's seat (PROTOCOL.md 7.3): its shown rating.
        badges.push(h('span', { class: 'badge badge-rating', 'data-testid': `rating-${p.id}` }, `Rating ${ratingText(p.rating)}`));
        if (p.id === S.me && p.profile_id === signedIn()?.id) seenRating(p.rating);
      }
      const remove = host && p.id !== S.me
        ? h('button', {
          type: 'button', class: 'btn btn-small btn-ghost', 'data-testid': `remove-${p.id}`,
          'aria-label': `Remove ${p.name}`, onclick: () => send({ type: 'remove_player', player_id: p.id }),
        }, 'Remove')
        : null;
      return h('li', { class: `seat-row${p.connected || p.is_ai ? '' : ' is-offline'}` },
        h('span', { class: `avatar${p.is_ai ? ' avatar-ai' : ''}`, 'aria-hidden': 'true' }, p.is_ai ? '⚙' : p.name.slice(0, 1).toUpperCase()),
        h('span', { class: 'seat-name' }, p.name),
        h('span', { class: 'badges' }, badges),
        remove);
    }),
  );
  $('ai-note').hidden = l.ai_available !== false || !l.players.some((p) => p.is_ai);
  $('host-controls').hidden = !host;
  const guest = $('guest-info');
  guest.hidden = host;
  const o = l.options ?? { hidden_bids: false, bid_restriction: 'none', turn_seconds: 0 };
  if (!host) {
    const hostName = l.players.find((p) => p.id === l.host_id)?.name ?? 'the host';
    guest.textContent = `Waiting for ${hostName} to start the game. Options: ${o.hidden_bids ? 'hidden bids' : 'open bids'}, bid restriction ${o.bid_restriction}, turn timer ${o.turn_seconds ? `${o.turn_seconds} s` : 'off'}.`;
    return;
  }
  const full = l.players.length >= (l.max_players ?? 6);
  $('add-ai').disabled = full;
  $('ai-level').disabled = full;
  $('option-hidden-bids').checked = !!o.hidden_bids;
  $('option-public').checked = !!l.public;
  $('option-bid-restriction').value = o.bid_restriction ?? 'none';
  const ts = $('option-turn-seconds');
  const tsValue = String(o.turn_seconds ?? 0);
  if (![...ts.options].some((op) => op.value === tsValue)) ts.append(h('option', { value: tsValue }, `${tsValue} seconds`));
  ts.value = tsValue;
  const enough = l.players.length >= (l.min_players ?? 3);
  const start = $('start-game');
  const hint = $('start-hint');
  if (!acceptingGames()) {
    start.disabled = true;
    hint.textContent = 'Server busy: games cannot start right now.';
    hint.className = 'start-hint hint-busy';
  } else if (!enough) {
    start.disabled = true;
    hint.textContent = `Need at least ${l.min_players ?? 3} players: invite friends or add AI players.`;
    hint.className = 'start-hint muted';
  } else {
    start.disabled = false;
    hint.textContent = '';
    hint.className = 'start-hint muted';
  }
  start.setAttribute('aria-describedby', 'start-hint');
}

/** Angle (degrees, 0 = right, 90 = up) of a seat as seen from `you` at the bottom. */
function seatAngle(seat, you, n) {
  const offset = (seat - you + n) % n;
  if (offset === 0) return 270;
  // Play passes to seat + 1, on your left; the others go round the top to your right.
  return 180 + 15 - (offset * (180 + 30)) / n;
}

/** Where a seat's plate sits on the felt, in percent of its width and height. */
function seatPos(seat, you, n) {
  const a = (seatAngle(seat, you, n) * Math.PI) / 180;
  return { x: 50 + 44 * Math.cos(a), y: seat === you ? 92 : 50 - 42 * Math.sin(a) };
}

function legal(kind) {
  return (S.game?.observation.legal_actions ?? []).filter((a) => a.kind === kind);
}

function act(action) {
  if (S.pending) return;
  if (send({ type: 'action', action })) {
    S.pending = true;
    render();
  }
}

function renderGame() {
  const g = S.game;
  const o = g.observation;
  // A spectator (`you` null) sees the table from seat 0's side, and has no hand.
  const you = g.you ?? 0;
  const n = o.players;
  const ps = players();
  const watching = g.you === null || g.you === undefined;
  $('view-game').classList.toggle('spectating', watching);
  $('hand-area').hidden = watching;

  // Round and trump information.
  const info = $('game-info');
  fill(info,
    h('span', { class: 'round-pill' }, `Round ${o.round} of ${o.rounds}`),
    h('span', { class: 'info-sep', 'aria-hidden': 'true' }, '·'),
    h('span', {}, `${o.round} ${o.round === 1 ? 'card' : 'cards'} each`),
    o.options?.hidden_bids ? h('span', { class: 'badge' }, 'Hidden bids') : null,
    o.options?.bid_restriction && o.options.bid_restriction !== 'none' ? h('span', { class: 'badge' }, `${o.options.bid_restriction} rule`) : null,
  );

  // Trump spot.
  const trump = $('trump-spot');
  const trumpChildren = [h('span', { class: 'spot-label' }, 'Trump')];
  if (o.trump_card) trumpChildren.push(cardFace(o.trump_card, 'sm'));
  let trumpText;
  if (o.trump_suit) trumpChildren.push(suitBadge(o.trump_suit));
  else if (o.phase === 'choosing_trump') trumpChildren.push(h('span', { class: 'suit-badge suit-none' }, 'Dealer chooses'));
  else trumpChildren.push(suitBadge(null));
  if (o.trump_suit) trumpText = `Trump: ${o.trump_suit}`;
  else if (o.phase === 'choosing_trump') trumpText = 'Trump: the dealer is choosing';
  else trumpText = 'No trump this round';
  if (o.trump_card) trumpText += `. Turned card: ${cardName(o.trump_card)}`;
  trump.setAttribute('aria-label', trumpText);
  trump.setAttribute('role', 'group');
  fill(trump, ...trumpChildren);

  // Seats around the table (you at the bottom).
  const ring = $('seats-ring');
  const tricksDone = o.tricks_won.reduce((a, b) => a + b, 0);
  fill(ring,
    ...Array.from({ length: n }, (_, seat) => {
      const p = ps[seat] ?? { name: `Seat ${seat + 1}`, is_ai: false, connected: true };
      const isYou = seat === g.you;
      const { x, y } = seatPos(seat, you, n);
      const bid = o.bids[seat];
      let bidText;
      if (bid !== null && bid !== undefined) bidText = `Bid ${bid}`;
      else if (o.has_bid?.[seat]) bidText = 'Has bid';
      else bidText = o.phase === 'bidding' && o.to_act === seat ? 'Bidding...' : 'No bid yet';
      const inTrick = o.trick.some((t) => t.player === seat);
      const cardsLeft = o.phase === 'playing' ? o.round - tricksDone - (inTrick ? 1 : 0) : o.phase === 'finished' ? 0 : o.round;
      const turn = o.to_act === seat;
      const cls = ['seat-plate', isYou ? 'seat-you' : '', turn ? 'seat-turn' : '', !p.connected && !p.is_ai ? 'seat-offline' : ''].join(' ');
      const label = `${isYou ? 'You' : p.name}${p.is_ai ? ' (AI)' : ''}${!p.connected && !p.is_ai ? ' (offline)' : ''}${seat === o.dealer ? ', dealer' : ''}: ${bidText.toLowerCase()}, ${o.tricks_won[seat]} ${o.tricks_won[seat] === 1 ? 'trick' : 'tricks'} won, score ${o.scores[seat]}${turn ? ', to play' : ''}`;
      return h('div', { class: cls, style: `--x:${x}%;left:${x}%;top:${y}%`, role: 'group', 'aria-label': label, 'data-seat': seat },
        h('div', { class: 'plate-top' },
          h('span', { class: 'plate-name' }, p.name, isYou ? h('span', { class: 'you-suffix' }, ' (you)') : null),
          p.is_ai ? h('span', { class: 'badge badge-ai', 'aria-hidden': 'true' }, 'AI') : null,
          !p.connected && !p.is_ai ? h('span', { class: 'badge badge-off', 'aria-hidden': 'true' }, 'Offline') : null,
          seat === o.dealer ? h('span', { class: 'dealer-chip', title: 'Dealer', 'aria-hidden': 'true' }, 'D') : null),
        h('div', { class: 'plate-stats', 'aria-hidden': 'true' },
          h('span', { class: 'stat-bid' }, bidText),
          h('span', { class: 'stat-won' }, `Won ${o.tricks_won[seat]}`),
          h('span', { class: 'stat-score' }, `${o.scores[seat]} pts`)),
        !isYou && cardsLeft > 0
          ? h('div', { class: 'plate-cards', 'aria-hidden': 'true' },
            ...Array.from({ length: Math.min(cardsLeft, 8) }, () => h('span', { class: 'mini-back' })),
            cardsLeft > 8 ? h('span', { class: 'mini-more' }, `+${cardsLeft - 8}`) : null)
          : null);
    }),
  );

  // The trick in the middle.
  const trickEl = $('trick');
  let cards = o.trick;
  let winner = null;
  if (cards.length === 0 && S.shownTrick) {
    cards = S.shownTrick.cards;
    winner = S.shownTrick.winner;
  } else if (cards.length === 0 && o.phase === 'playing' && o.last_trick) {
    cards = o.last_trick.cards;
    winner = o.last_trick.winner;
  }
  // Spread the trick wider on a wide table; keep it clear of the seats on a phone.
  const narrow = $('felt').clientWidth < 560;
  const rx = narrow ? 15 : n > 4 ? 24 : 19;
  const ry = narrow ? 22 : 22;
  // A completed trick sweeps towards the winner's seat (see SWEEP_DELAY_MS).
  const felt = $('felt');
  const sweepAge = winner !== null && S.shownTrick ? performance.now() - S.shownTrick.at : null;
  const winPos = winner === null ? null : seatPos(winner, you, n);
  const trickItems = cards.map((pc, i) => {
    const a = (seatAngle(pc.player, you, n) * Math.PI) / 180;
    const x = 50 + rx * Math.cos(a);
    const y = 50 - ry * Math.sin(a);
    const fresh = !S.seenTrick.has(pc.card);
    S.seenTrick.add(pc.card);
    const isWin = winner === pc.player;
    const who = seatName(pc.player);
    let sweep = '';
    let sweepStyle = '';
    if (sweepAge !== null) {
      sweep = sweepAge >= SWEEP_DELAY_MS + SWEEP_MS ? ' swept' : ' sweep';
      const sx = ((winPos.x - x) / 100) * felt.clientWidth;
      const sy = ((winPos.y - y) / 100) * felt.clientHeight;
      sweepStyle = `;--sx:${sx.toFixed(0)}px;--sy:${sy.toFixed(0)}px;--sdelay:${Math.max(0, SWEEP_DELAY_MS - sweepAge).toFixed(0)}ms`;
    }
    // The name goes on the side of the card towards the middle, clear of the seat.
    const below = Math.sin(a) < -0.3;
    return h('div', {
      class: `trick-card${fresh ? ' fresh' : ''}${isWin ? ' winner' : ''}${winner !== null && !isWin ? ' loser' : ''}${below ? ' who-above' : ''}${sweep}`,
      style: `left:${x}%;top:${y}%;z-index:${i + 1};--dx:${Math.cos(a) * 60}px;--dy:${-Math.sin(a) * 60}px${sweepStyle}`,
      role: 'listitem',
      'aria-label': `${who}: ${cardName(pc.card)}${isWin ? ' (won the trick)' : ''}`,
    }, cardFace(pc.card, 'lg'), h('span', { class: 'trick-who', 'aria-hidden': 'true' }, who));
  });
  const centerNote = winner !== null
    ? h('div', { class: 'trick-note', 'aria-hidden': 'true' }, `${seatName(winner)} won the trick`)
    : cards.length === 0
      ? h('div', { class: 'trick-note trick-empty', 'aria-hidden': 'true' }, o.phase === 'bidding' ? 'Bidding' : o.phase === 'choosing_trump' ? 'Choosing trump' : o.phase === 'playing' ? `${seatName(o.to_act)} ${verb(o.to_act, 'lead', 'leads')}` : '')
      : null;
  trickEl.setAttribute('role', 'list');
  fill(trickEl, ...trickItems, centerNote);

  // Whose turn it is.
  renderTurn();

  // Actions: bids and trump choice.
  const bar = $('action-bar');
  const bids = legal('bid');
  const trumps = legal('choose_trump');
  const acting = bids.length > 0 || trumps.length > 0;
  fillKeyed(bar, [o.round, bids.map((b) => b.bid), trumps.map((t) => t.suit), S.pending], () => actionButtons(o, bids, trumps));
  bar.hidden = !acting;
  $('view-game').classList.toggle('acting', acting);

  // Your hand.
  const plays = new Set(legal('play').map((a) => a.card));
  const myTurnToPlay = plays.size > 0;
  const hand = sortHand(o.hand, o.trump_suit);
  const handEl = $('hand');
  handEl.classList.toggle('hand-active', myTurnToPlay);
  fillKeyed(handEl, [hand, [...plays], o.trump_suit, S.pending], () => handCards(o, hand, plays));
  layoutHand();

  // Side panels.
  renderLastTrick(o);
  renderScores(o);
  renderLog();

  // End of the game.
  const finished = o.phase === 'finished';
  $('end-overlay').hidden = !finished;
  if (finished) renderEnd(o);
}

/** The bid buttons (every bid up to the round, those not in `bids` disabled) and the
 *  trump buttons. */
function actionButtons(o, bids, trumps) {
  const barChildren = [];
  if (bids.length) {
    const allowed = new Set(bids.map((b) => b.bid));
    const max = Math.max(o.round, ...allowed);
    barChildren.push(
      h('div', { class: 'action-title', id: 'bid-title' }, 'How many tricks will you win?'),
      h('div', { class: 'bid-buttons', role: 'group', 'aria-labelledby': 'bid-title' },
        ...Array.from({ length: max + 1 }, (_, b) => h('button', {
          type: 'button',
          class: 'btn bid-btn',
          'data-testid': `bid-${b}`,
          disabled: !allowed.has(b) || S.pending,
          title: allowed.has(b) ? `Bid ${b}` : 'This bid is not allowed now',
          'aria-label': allowed.has(b) ? `Bid ${b}` : `Bid ${b} (not allowed now)`,
          onclick: () => act({ kind: 'bid', bid: b }),
        }, String(b)))),
    );
  }
  if (trumps.length) {
    barChildren.push(
      h('div', { class: 'action-title', id: 'trump-title' }, 'A Wizard was turned: choose the trump suit'),
      h('div', { class: 'trump-buttons', role: 'group', 'aria-labelledby': 'trump-title' },
        ...trumps.map((t) => {
          const s = SUIT_BY_NAME[t.suit];
          return h('button', {
            type: 'button', class: `btn trump-btn ${s?.cls ?? ''}`, 'data-testid': `trump-${t.suit}`,
            disabled: S.pending, onclick: () => act({ kind: 'choose_trump', suit: t.suit }),
          }, h('span', { class: 'sym', 'aria-hidden': 'true' }, s?.symbol ?? ''), ` ${t.suit[0].toUpperCase()}${t.suit.slice(1)}`);
        })),
    );
  }
  return barChildren;
}

/** The cards of the hand as buttons, enabled for the cards in `plays`. */
function handCards(o, hand, plays) {
  const myTurnToPlay = plays.size > 0;
  return hand.map((card) => {
    const ok = plays.has(card) && !S.pending;
    const c = parseCard(card);
    const isTrump = c.kind === 'suited' && o.trump_suit && SUITS[c.suit].name === o.trump_suit;
    return h('li', {},
      h('button', {
        type: 'button',
        class: `card-btn${ok ? ' playable' : ''}${myTurnToPlay && !ok ? ' unplayable' : ''}${isTrump ? ' is-trump' : ''}`,
        'data-testid': `card-${card}`,
        'data-card': card,
        disabled: !ok,
        'aria-label': `${cardName(card)}${isTrump ? ', trump' : ''}${myTurnToPlay && !ok ? ', cannot be played now' : ''}`,
        onclick: () => act({ kind: 'play', card }),
      }, cardFace(card, 'lg')));
  });
}

function renderTurn() {
  const el = $('turn-indicator');
  const o = S.game?.observation;
  if (!o) return;
  let text;
  let mine = false;
  if (o.phase === 'finished') text = 'The game is over.';
  else if (o.to_act === null || o.to_act === undefined) {
    text = o.phase === 'bidding' && o.options?.hidden_bids ? 'Waiting for the others to bid...' : 'Waiting...';
  } else if (o.to_act === S.game.you && o.legal_actions.length) {
    mine = true;
    const what = { bidding: 'make your bid', playing: 'play a card', choosing_trump: 'choose trump' }[o.phase] ?? 'act';
    text = `Your turn: ${what}`;
  } else {
    const what = { bidding: 'bidding', playing: 'playing', choosing_trump: 'choosing trump' }[o.phase] ?? 'thinking';
    text = `${seatName(o.to_act)} is ${what}...`;
  }
  el.classList.toggle('my-turn', mine);
  setMyTurn(mine && !S.pending);
  const left = S.deadline === null ? null : Math.max(0, Math.ceil((S.deadline - performance.now()) / 1000));
  fill(el,
    h('span', { class: 'turn-text' }, text),
    left === null ? null : h('span', { class: `countdown${left <= 5 ? ' countdown-low' : ''}`, id: 'countdown', 'aria-label': `${left} seconds left` }, `${left} s`),
  );
}

setInterval(() => {
  if (!$('server-full-banner').hidden && S.retryAt) {
    const left = Math.max(0, Math.ceil((S.retryAt - performance.now()) / 1000));
    $('server-full-detail').textContent = left > 0 ? `(next try in ${left} s)` : '(trying now)';
  }
  if (S.view === 'game' && S.deadline !== null) {
    const cd = $('countdown');
    if (!cd) return;
    const left = Math.max(0, Math.ceil((S.deadline - performance.now()) / 1000));
    cd.textContent = `${left} s`;
    cd.setAttribute('aria-label', `${left} seconds left`);
    cd.classList.toggle('countdown-low', left <= 5);
  }
}, 250);

function layoutHand() {
  const handEl = $('hand');
  const items = handEl.children.length;
  if (!items) return;
  const first = handEl.firstElementChild;
  const cardW = first.getBoundingClientRect().width || 72;
  const avail = handEl.clientWidth - 8;
  let overlap = 6;
  if (items > 1 && cardW * items + overlap * (items - 1) > avail) overlap = (avail - cardW * items) / (items - 1);
  handEl.style.setProperty('--gap', `${Math.max(overlap, -cardW * 0.72)}px`);
}
window.addEventListener('resize', () => {
  if (S.view === 'game') layoutHand();
});
// The score sheet and the event log show their newest rows: when their panels change
// size (the window, a spectator's line coming or going), they scroll to the end again.
const keepAtEnd = new ResizeObserver((entries) => {
  for (const e of entries) e.target.scrollTop = e.target.scrollHeight;
});
for (const id of ['scoreboard', 'event-log']) keepAtEnd.observe($(id));

function renderLastTrick(o) {
  const el = $('last-trick');
  let lt = o.last_trick;
  let title = 'Last trick';
  // Before this round's first trick: the previous round's last one, said to be so.
  const before = S.roundEndTrick;
  if (!lt && before && before.round === o.round - 1 && o.phase !== 'finished') {
    lt = before;
    title = `Last trick of round ${before.round}`;
  }
  $('last-trick-title').textContent = title;
  $('last-trick-winner').textContent = lt ? `${seatName(lt.winner)} won it` : '';
  if (!lt) {
    fill(el, h('p', { class: 'muted lt-none' }, 'No trick completed yet this round.'));
    return;
  }
  fill(el,
    h('ul', { class: 'last-trick-cards' },
      ...lt.cards.map((pc) => h('li', { class: pc.player === lt.winner ? 'winner' : '', 'aria-label': `${seatName(pc.player)}: ${cardName(pc.card)}${pc.player === lt.winner ? ', won' : ''}` },
        cardFace(pc.card, 'sm'),
        h('span', { class: 'lt-who', 'aria-hidden': 'true' }, seatName(pc.player))))),
  );
}

function renderScores(o) {
  const ps = players();
  const n = o.players;
  const names = Array.from({ length: n }, (_, i) => (i === S.game.you ? 'You' : ps[i]?.name ?? `Seat ${i + 1}`));
  const head = h('tr', {}, h('th', { scope: 'col' }, 'Rnd'), ...names.map((nm) => h('th', { scope: 'col', title: nm }, h('span', { class: 'th-name' }, nm))));
  const rows = [];
  const running = new Array(n).fill(0);
  (o.round_scores ?? []).forEach((deltas, r) => {
    rows.push(h('tr', {},
      h('th', { scope: 'row' }, String(r + 1)),
      ...deltas.map((d, i) => {
        running[i] += d;
        return h('td', { class: d >= 0 ? 'pos' : 'neg' },
          h('span', { class: 'total' }, String(running[i])),
          h('span', { class: 'delta' }, `${d > 0 ? '+' : ''}${d}`));
      })));
  });
  if (o.phase !== 'finished') {
    rows.push(h('tr', { class: 'current-round' },
      h('th', { scope: 'row' }, String(o.round)),
      ...Array.from({ length: n }, (_, i) => {
        const b = o.bids[i];
        const bid = b !== null && b !== undefined ? String(b) : o.has_bid?.[i] ? '?' : '–';
        return h('td', { 'aria-label': `bid ${bid === '–' ? 'not yet' : bid === '?' ? 'hidden' : bid}, won ${o.tricks_won[i]}` }, `${o.tricks_won[i]}/${bid}`);
      })));
  }
  const foot = h('tr', { class: 'totals' }, h('th', { scope: 'row' }, 'Total'), ...o.scores.map((s) => h('td', {}, String(s))));
  fill($('scoreboard'),
    h('table', { class: 'score-table' },
      h('caption', { class: 'sr-only' }, 'Score sheet: total after each round with the change in small print; the current round shows tricks won / bid.'),
      h('thead', {}, head), h('tbody', {}, ...rows), h('tfoot', {}, foot)),
  );
  const wrap = $('scoreboard');
  wrap.scrollTop = wrap.scrollHeight;
  // The panel may shrink to 5 rows, or to fewer when there are fewer (style.css).
  wrap.parentElement.style.setProperty('--sheet-rows', String(Math.min(rows.length, 5)));
}

function renderLog() {
  if (S.unannounced.length) {
    // One polite announcement per change, with only what is new.
    $('announcer').textContent = S.unannounced.slice(-6).join(' ');
    S.unannounced = [];
  }
  const el = $('event-log');
  const items = S.log.slice(-12);
  if (!items.length) {
    fill(el, h('li', { class: 'log-minor' }, 'What happens at the table shows here.'));
    return;
  }
  fill(el, ...items.map((e) => h('li', { class: e.kind ? `log-${e.kind}` : '' }, e.text)));
  el.scrollTop = el.scrollHeight;
}

function renderEnd(o) {
  const ranking = o.ranking ?? S.ranking ?? [];
  const ps = players();
  fill($('ranking'),
    ...ranking.map((r) => h('li', { class: `rank-row place-${r.place}${r.player === S.game.you ? ' rank-you' : ''}` },
      h('span', { class: 'rank-place' }, `${r.place}.`),
      h('span', { class: 'rank-name' }, r.player === S.game.you ? `${ps[r.player]?.name ?? 'You'} (you)` : ps[r.player]?.name ?? `Seat ${r.player + 1}`),
      h('span', { class: 'rank-score' }, `${r.score} points`),
      rankRating(ps[r.player], r.player))),
  );
  const mine = ps[S.game.you];
  if (mine?.rating != null && mine.profile_id === signedIn()?.id) seenRating(mine.rating);
  const winners = ranking.filter((r) => r.place === 1);
  $('end-title').textContent = winners.some((r) => r.player === S.game.you)
    ? 'You win!'
    : `${winners.map((r) => ps[r.player]?.name).join(' and ')} ${winners.length > 1 ? 'win' : 'wins'}!`;
  $('return-to-lobby').hidden = !isHost();
  $('end-wait').hidden = isHost();
}

/** A rated seat's new rating and its change at the end of a game. */
function rankRating(p, seat) {
  if (!p || p.rating == null) return null;
  const change = p.rating_change != null ? ` (${changeText(p.rating_change)})` : '';
  return h('span', { class: 'rank-rating', 'data-testid': `rating-change-${seat}` }, `rating ${ratingText(p.rating)}${change}`);
}

// ---------------------------------------------------------------- controls

function nameValue() {
  const v = $('name-input').value.trim();
  if (!v) {
    toast('Please enter your name first.');
    $('name-input').focus();
    return null;
  }
  try {
    localStorage.setItem(NAME_KEY, v);
  } catch {
    /* ignore */
  }
  return v;
}

function copy(text, what) {
  const done = () => toast(`${what} copied.`, 2000);
  if (navigator.clipboard?.writeText) {
    navigator.clipboard.writeText(text).then(done, () => fallbackCopy(text, done));
  } else fallbackCopy(text, done);
}

function fallbackCopy(text, done) {
  const input = $('share-link');
  const old = input.value;
  input.value = text;
  input.select();
  try {
    document.execCommand('copy');
    done();
  } catch {
    toast('Copy failed: select the text and copy it by hand.');
  }
  input.value = old;
}

/** The name and the lobby code typed on the home page, for Join and Watch; null (with a
 *  toast for a short code) when either is missing. */
function joinFields() {
  const name = nameValue();
  if (!name) return null;
  const code = $('join-code-input').value.trim().toUpperCase();
  if (code.length !== 6) {
    toast('A lobby code has 6 characters.');
    $('join-code-input').focus();
    return null;
  }
  return { code, name };
}

function wire() {
  try {
    $('name-input').value = localStorage.getItem(NAME_KEY) ?? '';
  } catch {
    /* ignore */
  }
  const params = new URLSearchParams(location.search);
  const join = params.get('join');
  if (join) {
    S.joinFromLink = join.toUpperCase();
    $('join-code-input').value = S.joinFromLink.slice(0, 6);
  }
  const watch = params.get('watch');
  if (watch && !join) {
    S.watchFromLink = watch.toUpperCase();
    $('join-code-input').value = S.watchFromLink.replace(/[^A-Z0-9]/g, '').slice(0, 6);
  }
  $('create-lobby').addEventListener('click', () => {
    const name = nameValue();
    if (name) send({ type: 'create_lobby', name });
  });
  $('join-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const form = joinFields();
    if (form) send({ type: 'join_lobby', ...form });
  });
  $('join-code-input').addEventListener('input', (ev) => {
    const el = ev.target;
    const v = el.value.toUpperCase().replace(/[^A-Z0-9]/g, '');
    if (v !== el.value) el.value = v;
  });
  $('name-input').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      if ($('join-code-input').value.trim()) $('join-lobby').click();
      else if (!$('create-lobby').disabled) $('create-lobby').click();
    }
  });
  $('copy-code').addEventListener('click', () => copy(S.lobby?.code ?? '', 'Code'));
  $('copy-link').addEventListener('click', () => copy($('share-link').value, 'Link'));
  $('copy-watch-link').addEventListener('click', () => copy($('watch-link').value, 'Watch link'));
  $('watch-lobby').addEventListener('click', () => {
    const form = joinFields();
    if (!form) return;
    const { code, name } = form;
    S.watching = { code, name };
    send({ type: 'spectate', code, name });
  });
  $('add-ai').addEventListener('click', () => send({ type: 'add_ai', level: $('ai-level').value }));
  $('start-game').addEventListener('click', () => send({ type: 'start_game' }));
  $('option-hidden-bids').addEventListener('change', (ev) => send({ type: 'set_options', hidden_bids: ev.target.checked }));
  $('option-public').addEventListener('change', (ev) => send({ type: 'set_options', public: ev.target.checked }));
  $('play-now').addEventListener('click', () => {
    const name = nameValue();
    if (!name) return;
    const seats = Number($('quick-seats').value);
    S.queued = { name, seats, since: null };
    send({ type: 'quick_play', name, seats });
    render();
  });
  $('quick-cancel').addEventListener('click', () => {
    S.queued = null;
    send({ type: 'cancel_quick_play' });
    render();
  });
  $('tables-refresh').addEventListener('click', () => send({ type: 'list_tables', running: true }));
  // The time waited ticks while we wait.
  setInterval(() => {
    if (S.queued && S.view === 'home') renderQuick();
  }, 1000);
  $('option-bid-restriction').addEventListener('change', (ev) => send({ type: 'set_options', bid_restriction: ev.target.value }));
  $('option-turn-seconds').addEventListener('change', (ev) => send({ type: 'set_options', turn_seconds: Number(ev.target.value) }));
  $('leave-lobby').addEventListener('click', () => send({ type: 'leave_lobby' }));
  const leaveGame = () => {
    const running = S.game && S.game.observation.phase !== 'finished' && !spectating();
    // eslint-disable-next-line no-alert
    if (!running || window.confirm('Leave the game? An AI player takes over your seat.')) send({ type: 'leave_lobby' });
  };
  $('leave-game').addEventListener('click', leaveGame);
  $('end-leave').addEventListener('click', leaveGame);
  $('return-to-lobby').addEventListener('click', () => send({ type: 'return_to_lobby' }));
  $('open-replay').addEventListener('click', () => {
    if (S.game?.id) openReplay(S.game.id);
  });
  $('take-over').addEventListener('click', () => {
    S.replaced = false;
    $('replaced-banner').hidden = true;
    conn.start();
  });
  // Keyboard: digits bid when bid buttons are shown.
  document.addEventListener('keydown', (ev) => {
    if (S.view !== 'game' || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
    if (ev.key === 'ArrowLeft' || ev.key === 'ArrowRight') {
      // Arrow keys move between the cards of the hand.
      const cards = [...document.querySelectorAll('#hand button:not(:disabled)')];
      const i = cards.indexOf(document.activeElement);
      if (i >= 0 && cards.length > 1) {
        ev.preventDefault();
        cards[(i + (ev.key === 'ArrowRight' ? 1 : cards.length - 1)) % cards.length].focus();
      }
      return;
    }
    if (/^[0-9]$/.test(ev.key)) {
      const btn = document.querySelector(`[data-testid="bid-${ev.key}"]`);
      if (btn && !btn.disabled) {
        ev.preventDefault();
        btn.click();
      }
    }
  });
}

const conn = new Connection({ onMessage, onStatus, profileKey });
const page = pageFromUrl();
adoptKeyLink();
initAlerts($('sound-toggle'));
if (page) {
  // A profile page or the leaderboard: public JSON, no game connection.
  showPage(page);
} else {
  initChat(send);
  initProfile({ send, toast, restart: () => conn.reconnect(), nameValue });
  wire();
  initReplay();
  conn.start();
  render();
}
