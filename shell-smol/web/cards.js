// Cards as the protocol spells them ("h14", "W1", "J3") and how the client shows them.
// Display only: which card may be played always comes from the server's legal_actions.

export const SUITS = {
  c: { name: 'clubs', symbol: '♣', letter: 'C', cls: 'suit-c' },
  d: { name: 'diamonds', symbol: '♦', letter: 'D', cls: 'suit-d' },
  h: { name: 'hearts', symbol: '♥', letter: 'H', cls: 'suit-h' },
  s: { name: 'spades', symbol: '♠', letter: 'S', cls: 'suit-s' },
};

export const SUIT_BY_NAME = Object.fromEntries(
  Object.entries(SUITS).map(([k, v]) => [v.name, { key: k, ...v }]),
);

const RANK_SHORT = { 11: 'J', 12: 'Q', 13: 'K', 14: 'A' };
const RANK_LONG = { 11: 'Jack', 12: 'Queen', 13: 'King', 14: 'Ace' };

/** Parses "h12" / "W1" / "J3" into {kind, suit, rank}. */
export function parseCard(card) {
  const first = card[0];
  if (first === 'W') return { kind: 'wizard', n: Number(card.slice(1)) };
  if (first === 'J') return { kind: 'jester', n: Number(card.slice(1)) };
  return { kind: 'suited', suit: first, rank: Number(card.slice(1)) };
}

export function rankLabel(rank) {
  return RANK_SHORT[rank] || String(rank);
}

/** "Queen of hearts", "Wizard", "Jester". */
export function cardName(card) {
  const c = parseCard(card);
  if (c.kind === 'wizard') return 'Wizard';
  if (c.kind === 'jester') return 'Jester';
  return `${RANK_LONG[c.rank] || c.rank} of ${SUITS[c.suit].name}`;
}

/** Short text for logs: "Q♥", "Wizard", "Jester". */
export function cardShort(card) {
  const c = parseCard(card);
  if (c.kind === 'wizard') return 'a Wizard';
  if (c.kind === 'jester') return 'a Jester';
  return `${rankLabel(c.rank)}${SUITS[c.suit].symbol}`;
}

const SUIT_ORDER = { s: 0, h: 1, c: 2, d: 3 };

/** Display order of a hand: suits in alternating colours (the trump suit first),
 *  low to high, then Jesters and Wizards. Purely cosmetic. */
export function sortHand(hand, trumpSuitName) {
  const trump = trumpSuitName ? SUIT_BY_NAME[trumpSuitName]?.key : null;
  const key = (card) => {
    const c = parseCard(card);
    if (c.kind === 'jester') return [5, 0, c.n];
    if (c.kind === 'wizard') return [6, 0, c.n];
    const group = c.suit === trump ? -1 : SUIT_ORDER[c.suit];
    return [group, c.rank, 0];
  };
  return [...hand].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    for (let i = 0; i < 3; i++) if (ka[i] !== kb[i]) return ka[i] - kb[i];
    return 0;
  });
}

/** Builds the DOM of one card face. `size` is a CSS class: "lg", "md", "sm". */
export function cardFace(card, size = 'md') {
  const c = parseCard(card);
  const el = document.createElement('span');
  el.className = `card card-${size}`;
  el.setAttribute('aria-hidden', 'true');
  let corner;
  let pip;
  let word = '';
  if (c.kind === 'wizard') {
    el.classList.add('card-wizard');
    corner = ['W', '★'];
    pip = '★';
    word = 'Wizard';
  } else if (c.kind === 'jester') {
    el.classList.add('card-jester');
    corner = ['Jr', '☺'];
    pip = '☺';
    word = 'Jester';
  } else {
    const s = SUITS[c.suit];
    el.classList.add(s.cls);
    corner = [rankLabel(c.rank), s.symbol];
    pip = s.symbol;
  }
  const tl = document.createElement('span');
  tl.className = 'corner corner-tl';
  tl.innerHTML = `<b>${corner[0]}</b><i>${corner[1]}</i>`;
  const br = document.createElement('span');
  br.className = 'corner corner-br';
  br.innerHTML = `<b>${corner[0]}</b><i>${corner[1]}</i>`;
  const mid = document.createElement('span');
  mid.className = 'pip';
  mid.textContent = pip;
  el.append(tl, mid, br);
  if (word) {
    const w = document.createElement('span');
    w.className = 'card-word';
    w.textContent = word;
    el.append(w);
  }
  return el;
}

/** A suit badge: symbol plus letter so suits differ without colour. */
export function suitBadge(suitName) {
  const s = SUIT_BY_NAME[suitName];
  const el = document.createElement('span');
  if (!s) {
    el.className = 'suit-badge suit-none';
    el.textContent = 'No trump';
    return el;
  }
  el.className = `suit-badge ${s.cls}`;
  el.innerHTML = `<span class="sym" aria-hidden="true">${s.symbol}</span> ${s.name[0].toUpperCase()}${s.name.slice(1)}`;
  return el;
}
