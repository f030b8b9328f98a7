// Pages read from the server's public JSON, without a game connection: a profile page
// (`/?profile=<id>`, from `/profiles/<id>`: name, rating, games and the recent games,
// each linking to its replay at `/?replay=<id>`) and the leaderboard (`/?leaderboard`,
// from `/leaderboard`: the top profiles and the AI levels' fixed ratings). Every name
// goes in as text, never as HTML.

import { ratingText } from './profile.js';

const $ = (id) => document.getElementById(id);

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** The page the address asks for: {kind: 'profile', id} or {kind: 'leaderboard'}, or
 *  null for the game client. */
export function pageFromUrl() {
  const params = new URLSearchParams(location.search);
  const id = params.get('profile');
  if (id) return { kind: 'profile', id };
  if (params.has('leaderboard')) return { kind: 'leaderboard' };
  return null;
}

/** The shown rating of a fixed (mu, sigma): mu - 3 sigma, to two decimals. */
function ordinal(r) {
  return Math.round(100 * (r.mu - 3 * r.sigma)) / 100;
}

function dateText(value) {
  const d = typeof value === 'number' ? new Date(value) : new Date(String(value));
  return Number.isNaN(d.getTime()) ? String(value ?? '') : d.toLocaleString();
}

function playerNames(players) {
  return (players ?? []).map((p) => (typeof p === 'string' ? p : p?.name ?? '?')).join(', ');
}

function back() {
  return h('p', { class: 'page-nav' },
    h('a', { href: '/', 'data-testid': 'page-home' }, 'Back to the game'),
    ' · ',
    h('a', { href: '/?leaderboard', 'data-testid': 'page-leaderboard' }, 'Leaderboard'));
}

function failed(root, title, why) {
  root.replaceChildren(back(), h('h2', { id: 'page-title' }, title),
    h('p', { class: 'notice', 'data-testid': 'page-error', role: 'status' }, why));
}

async function getJson(path) {
  const r = await fetch(path, { cache: 'no-store' });
  if (r.status === 404) return { missing: true };
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  return { body: await r.json() };
}

function recentGames(games) {
  if (!games.length) return h('p', { class: 'muted', 'data-testid': 'recent-none' }, 'No finished games yet.');
  const rows = games.map((g) => h('tr', { 'data-testid': 'recent-game' },
    h('td', {}, dateText(g.date)),
    h('td', {}, g.place ?? '-'),
    h('td', {}, g.score ?? '-'),
    h('td', {}, playerNames(g.players)),
    h('td', {}, h('a', { href: `/?replay=${encodeURIComponent(g.id)}`, 'data-testid': `replay-${g.id}` }, 'Replay'))));
  return h('table', { class: 'page-table', 'data-testid': 'recent-games' },
    h('caption', {}, 'Recent games'),
    h('thead', {}, h('tr', {}, ['Date', 'Place', 'Score', 'Players', ''].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows));
}

async function profilePage(root, id) {
  let got;
  try {
    got = await getJson(`/profiles/${encodeURIComponent(id)}`);
  } catch {
    failed(root, 'Profile', 'The server could not be reached. Try again in a moment.');
    return;
  }
  if (got.missing) {
    failed(root, 'Profile', 'There is no such profile (it may have been deleted).');
    return;
  }
  const p = got.body;
  document.title = `${p.name} - Wizard`;
  root.replaceChildren(
    back(),
    h('h2', { id: 'page-title', 'data-testid': 'profile-page-name' }, p.name),
    h('dl', { class: 'page-figures' },
      h('dt', {}, 'Rating'), h('dd', { 'data-testid': 'profile-page-rating' }, ratingText(p.rating)),
      h('dt', {}, 'Rated games'), h('dd', { 'data-testid': 'profile-page-games' }, p.games),
      h('dt', {}, 'Skill (mu, sigma)'), h('dd', {}, `${ratingText(p.mu)}, ${ratingText(p.sigma)}`)),
    h('p', { class: 'hint' }, 'The rating is mu - 3 sigma: it grows as the server becomes surer of the skill.'),
    recentGames(Array.isArray(p.recent_games) ? p.recent_games : []),
  );
}

async function leaderboardPage(root) {
  let got;
  try {
    got = await getJson('/leaderboard');
  } catch {
    failed(root, 'Leaderboard', 'The server could not be reached. Try again in a moment.');
    return;
  }
  const board = got.body ?? { profiles: [], ai: {} };
  document.title = 'Leaderboard - Wizard';
  const profiles = board.profiles ?? [];
  const top = profiles.length
    ? h('table', { class: 'page-table', 'data-testid': 'leaderboard-profiles' },
      h('caption', {}, 'Players (at least 5 rated games)'),
      h('thead', {}, h('tr', {}, ['#', 'Name', 'Rating', 'Games'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, profiles.map((p, i) => h('tr', { 'data-testid': 'leaderboard-row' },
        h('td', {}, i + 1),
        h('td', {}, h('a', { href: `/?profile=${encodeURIComponent(p.id)}` }, p.name)),
        h('td', {}, ratingText(p.rating)),
        h('td', {}, p.games)))))
    : h('p', { class: 'muted', 'data-testid': 'leaderboard-empty' }, 'No player has 5 rated games yet.');
  const levels = [['easy', 'Easy'], ['normal', 'Normal'], ['strong', 'Strong']].filter(([k]) => board.ai?.[k]);
  const ai = h('table', { class: 'page-table', 'data-testid': 'leaderboard-ai' },
    h('caption', {}, 'AI levels (fixed ratings)'),
    h('thead', {}, h('tr', {}, ['Level', 'Rating', 'mu', 'sigma'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, levels.map(([k, name]) => h('tr', { 'data-testid': `leaderboard-ai-${k}` },
      h('td', {}, name),
      h('td', {}, ratingText(ordinal(board.ai[k]))),
      h('td', {}, ratingText(board.ai[k].mu)),
      h('td', {}, ratingText(board.ai[k].sigma))))));
  root.replaceChildren(back(), h('h2', { id: 'page-title' }, 'Leaderboard'), top, ai,
    h('p', { class: 'hint' }, 'Games against the AI count: its levels have fixed ratings, so they anchor the scale.'));
}

/** Shows the page `page` asks for in the page view. */
export function showPage(page) {
  for (const v of document.querySelectorAll('main > .view')) v.hidden = v.id !== 'view-page';
  document.body.dataset.view = 'page';
  const root = $('page');
  root.replaceChildren(h('p', { class: 'muted' }, 'Loading...'));
  const done = page.kind === 'profile' ? profilePage(root, page.id) : leaderboardPage(root);
  done.then(() => $('page-title')?.focus({ preventScroll: true }));
}
