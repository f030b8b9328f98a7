// The replay viewer: a finished game from `GET /games/<id>` (every hand revealed),
// stepped forward and back by move and by trick. Opened from the end screen, or by a
// link: /?replay=<id> or /#replay=<id>. Everything shown is set as text (names are
// plain text, never HTML); cards are drawn only after their code is checked.

import { cardFace, cardName, cardShort, sortHand, suitBadge } from './cards.js';

const CARD_RE = /^([cdhs]([2-9]|1[0-4])|[WJ][1-4])$/;
const ID_RE = /^[0-9a-f]{1,64}$/;
/** How long a just-finished game may take to reach the store's history. */
const FETCH_RETRIES = 10;
const FETCH_RETRY_MS = 500;

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'testid') node.dataset.testid = v;
    else node.setAttribute(k, String(v));
  }
  for (const c of children) node.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return node;
}

function card(code, size = 'sm') {
  if (!CARD_RE.test(code)) return el('span', { class: 'card-bad' }, '?');
  const face = cardFace(code, size);
  face.setAttribute('title', cardName(code));
  return face;
}

/**
 * The game as a list of moves, each with what the table looked like after it.
 * Bids go round from the first trick's leader (the seat after the dealer).
 */
function buildSteps(game) {
  const n = game.players.length;
  const steps = [];
  const totals = new Array(n).fill(0);
  game.rounds.forEach((round, r) => {
    const first = round.tricks[0]?.leader ?? 0;
    const start = { round: r, kind: 'deal' };
    steps.push(start);
    for (let i = 0; i < n; i++) {
      const seat = (first + i) % n;
      steps.push({ round: r, kind: 'bid', seat, bid: round.bids[seat] });
    }
    round.tricks.forEach((trick, t) => {
      trick.cards.forEach((c, i) => {
        const last = i === trick.cards.length - 1;
        steps.push({ round: r, kind: 'card', seat: (trick.leader + i) % n, card: c, trick: t, pos: i, last });
      });
    });
    round.scores.forEach((s, i) => { totals[i] += s; });
    steps[steps.length - 1].roundEnd = true;
    steps[steps.length - 1].totals = [...totals];
  });
  return steps;
}

/** The table after step `k`: hands left, bids made, tricks taken, the trick on the table. */
function tableAt(game, steps, k) {
  const step = steps[k];
  const round = game.rounds[step.round];
  const n = game.players.length;
  const played = new Set();
  const bids = new Array(n).fill(null);
  const taken = new Array(n).fill(0);
  let trick = [];
  let trickIndex = 0;
  let winner = null;
  let first = k;
  while (first > 0 && steps[first].kind !== 'deal') first -= 1;
  for (let i = first; i <= k; i++) {
    const s = steps[i];
    if (s.kind === 'bid') bids[s.seat] = s.bid;
    if (s.kind === 'card') {
      played.add(s.card);
      if (s.pos === 0) trick = [];
      trick.push({ seat: s.seat, card: s.card });
      trickIndex = s.trick;
      winner = null;
      if (s.last) {
        winner = round.tricks[s.trick].winner;
        taken[winner] += 1;
      }
    }
  }
  let totals = new Array(n).fill(0);
  for (let i = first - 1; i >= 0; i--) {
    if (steps[i].totals) {
      totals = steps[i].totals;
      break;
    }
  }
  if (step.totals) totals = step.totals;
  const hands = round.hands.map((h) => h.filter((c) => !played.has(c)));
  return { step, round, bids, taken, trick, trickIndex, winner, totals, hands };
}

function describe(game, step) {
  const name = (seat) => game.players[seat]?.name ?? `Seat ${seat + 1}`;
  if (step.kind === 'deal') return `Round ${step.round + 1}: the cards are dealt.`;
  if (step.kind === 'bid') return `${name(step.seat)} bids ${step.bid}.`;
  const what = CARD_RE.test(step.card) ? cardShort(step.card) : '?';
  let text = `${name(step.seat)} plays ${what}.`;
  if (step.last) {
    const w = game.rounds[step.round].tricks[step.trick].winner;
    text += ` ${name(w)} takes the trick.`;
  }
  if (step.roundEnd) text += ' Round over.';
  return text;
}

const R = { game: null, steps: [], k: 0 };

function render() {
  const { game, steps, k } = R;
  if (!game) return;
  const t = tableAt(game, steps, k);
  const moves = steps.filter((s) => s.kind !== 'deal').length;
  const done = steps.slice(0, k + 1).filter((s) => s.kind !== 'deal').length;
  $('replay-status').textContent =
    `Round ${t.step.round + 1} of ${game.rounds.length} · move ${done} of ${moves}`;
  $('replay-last').textContent = describe(game, t.step);
  const trump = $('replay-trump');
  trump.replaceChildren(el('span', {}, 'Trump: '), suitBadge(t.round.trump ?? ''));
  if (t.round.trump_card && CARD_RE.test(t.round.trump_card)) {
    trump.append(el('span', { class: 'muted' }, ' turned: '), card(t.round.trump_card));
  }
  $('replay-seats').replaceChildren(...game.players.map((p, seat) => {
    const who = p.is_ai ? `${p.name} (AI${p.level ? `, ${p.level}` : ''})` : p.name;
    const bid = t.bids[seat] === null ? '–' : String(t.bids[seat]);
    const hand = sortHand(t.hands[seat], t.round.trump);
    return el('li', { class: 'replay-seat', testid: `replay-seat-${seat}` },
      el('div', { class: 'replay-seat-head' },
        el('strong', { testid: `replay-name-${seat}` }, who),
        el('span', { testid: `replay-bid-${seat}` }, ` bid ${bid}`),
        el('span', { testid: `replay-taken-${seat}` }, ` · tricks ${t.taken[seat]}`),
        el('span', { testid: `replay-score-${seat}` }, ` · ${t.totals[seat]} points`)),
      el('div', { class: 'replay-hand', testid: `replay-hand-${seat}`, 'data-cards': hand.join(' ') },
        ...hand.map((c) => card(c))));
  }));
  const trick = $('replay-trick');
  trick.dataset.cards = t.trick.map((x) => x.card).join(' ');
  trick.dataset.winner = t.winner === null ? '' : String(t.winner);
  trick.replaceChildren(...t.trick.map((x) => el('li', { class: x.seat === t.winner ? 'winner' : '' },
    card(x.card, 'md'),
    el('span', { class: 'replay-trick-name' }, game.players[x.seat]?.name ?? ''))));
  $('replay-winner').textContent = t.winner === null
    ? ''
    : `${game.players[t.winner]?.name ?? ''} wins trick ${t.trickIndex + 1}`;
  $('replay-prev').disabled = k === 0;
  $('replay-prev-trick').disabled = k === 0;
  $('replay-next').disabled = k === steps.length - 1;
  $('replay-next-trick').disabled = k === steps.length - 1;
  $('replay-final').hidden = k !== steps.length - 1;
  $('replay-final').textContent = `Final scores: ${game.players
    .map((p, i) => `${p.name} ${game.final_scores[i]}`).join(', ')}`;
}

/** Ends of tricks (and starts of rounds): where stepping by trick stops. */
function isTrickStop(step) {
  return step.kind === 'deal' || (step.kind === 'card' && step.last);
}

function go(k) {
  R.k = Math.max(0, Math.min(R.steps.length - 1, k));
  render();
}

function nextTrick() {
  let k = R.k + 1;
  while (k < R.steps.length - 1 && !isTrickStop(R.steps[k])) k += 1;
  go(k);
}

function prevTrick() {
  let k = R.k - 1;
  while (k > 0 && !isTrickStop(R.steps[k])) k -= 1;
  go(k);
}

async function fetchGame(id) {
  for (let i = 0; i < FETCH_RETRIES; i++) {
    const res = await fetch(`/games/${id}`, { cache: 'no-store' });
    if (res.ok) return res.json();
    if (res.status !== 404 && res.status !== 503) throw new Error(`HTTP ${res.status}`);
    await new Promise((r) => setTimeout(r, FETCH_RETRY_MS));
  }
  return null;
}

/** Opens the replay of game `id` (a finished game; the viewer says so otherwise). */
export async function openReplay(id) {
  const box = $('replay');
  box.hidden = false;
  R.game = null;
  $('replay-body').hidden = true;
  $('replay-message').hidden = false;
  if (!ID_RE.test(id ?? '')) {
    $('replay-message').textContent = 'That is not a game id.';
    return;
  }
  $('replay-message').textContent = 'Loading the game...';
  let game = null;
  try {
    game = await fetchGame(id);
  } catch (e) {
    $('replay-message').textContent = `The game could not be loaded (${e.message}).`;
    return;
  }
  if (!game) {
    $('replay-message').textContent = 'No finished game has that id (a running game cannot be replayed).';
    return;
  }
  R.game = game;
  R.steps = buildSteps(game);
  R.k = 0;
  $('replay-message').hidden = true;
  $('replay-body').hidden = false;
  $('replay-link').value = `${location.origin}/?replay=${id}`;
  render();
  $('replay-next').focus();
}

function closeReplay() {
  $('replay').hidden = true;
  R.game = null;
  if (/replay=/.test(location.hash) || /replay=/.test(location.search)) {
    history.replaceState(null, '', '/');
  }
}

/** Wires the viewer's buttons and opens a replay named by the page's address. */
export function initReplay() {
  $('replay-prev').addEventListener('click', () => go(R.k - 1));
  $('replay-next').addEventListener('click', () => go(R.k + 1));
  $('replay-prev-trick').addEventListener('click', prevTrick);
  $('replay-next-trick').addEventListener('click', nextTrick);
  $('replay-start').addEventListener('click', () => go(0));
  $('replay-end').addEventListener('click', () => go(R.steps.length - 1));
  $('replay-close').addEventListener('click', closeReplay);
  document.addEventListener('keydown', (ev) => {
    if ($('replay').hidden || !R.game || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target instanceof HTMLInputElement) return;
    if (ev.key === 'ArrowRight') go(R.k + 1);
    else if (ev.key === 'ArrowLeft') go(R.k - 1);
    else if (ev.key === 'Escape') closeReplay();
    else return;
    ev.preventDefault();
  });
  const fromHash = /(?:^#|&)replay=([^&]+)/.exec(location.hash)?.[1];
  const fromQuery = new URLSearchParams(location.search).get('replay');
  const id = fromQuery ?? fromHash;
  if (id) openReplay(id);
}
