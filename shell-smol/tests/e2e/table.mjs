// End-to-end scenarios for the table (run by e2e.mjs): the rules page and the links to
// it; the lobby's Start game above the fold; while bidding, the hand, the bids and the
// side panels on screen with no stale trick, at 1280x800 and 375x812; your own card's
// label clear of your seat; names not cut on the phone; the title of a hidden tab on
// your turn and the sound toggle; late in a game at 1366x768, 1280x800 and 1920x1080, 5
// lines of the log and 5 rows of the score sheet in sight, Watching only while someone
// watches; a click not lost to a state that comes between press and release. Assertions
// are on element boxes, visibility and content; the screenshots are for people.

import { join } from 'node:path';

const OFFERED = '#action-bar [data-testid^="bid-"]:not(:disabled), #action-bar [data-testid^="trump-"]:not(:disabled), #hand [data-testid^="card-"]:not(:disabled)';

/** The boxes of every element matching `selector` that lie outside the viewport (or
 *  are empty), and how many matched. */
function offScreen(page, selector) {
  return page.evaluate((sel) => {
    const els = [...document.querySelectorAll(sel)];
    const bad = els.map((el) => {
      const r = el.getBoundingClientRect();
      const ok = r.width > 0 && r.height > 0 && r.left >= -0.5 && r.top >= -0.5
        && r.right <= innerWidth + 0.5 && r.bottom <= innerHeight + 0.5;
      return ok ? null : `${el.id || el.dataset.testid || el.className}: ${[r.left, r.top, r.right, r.bottom].map(Math.round)} in ${innerWidth}x${innerHeight}`;
    }).filter(Boolean);
    return { count: els.length, bad };
  }, selector);
}

/** How many of the items `itemSel` inside the scroll container `boxSel` lie wholly in
 *  its visible box: its client area, cut by every ancestor that clips (main scrolls) and
 *  by the window, less what its sticky header and footer cells cover; and whether the
 *  last item (the newest line, the current round) is one of them. */
function shownItems(page, boxSel, itemSel) {
  return page.evaluate(([boxSel, itemSel]) => {
    const box = document.querySelector(boxSel);
    if (!box) return { shown: 0, total: 0, last: false, why: `no ${boxSel}` };
    let top = 0;
    let bottom = innerHeight;
    let left = 0;
    let right = innerWidth;
    for (let el = box; el && el !== document.documentElement; el = el.parentElement) {
      const cs = getComputedStyle(el);
      if (cs.display === 'none' || cs.visibility === 'hidden') return { shown: 0, total: 0, last: false, why: 'hidden' };
      if (el === box || cs.overflowY !== 'visible' || cs.overflowX !== 'visible') {
        const r = el.getBoundingClientRect();
        const t = r.top + el.clientTop;
        const l = r.left + el.clientLeft;
        top = Math.max(top, t);
        bottom = Math.min(bottom, t + el.clientHeight);
        left = Math.max(left, l);
        right = Math.min(right, l + el.clientWidth);
      }
    }
    const sticky = (sel) => [...box.querySelectorAll(sel)].filter((c) => getComputedStyle(c).position === 'sticky')
      .map((c) => c.getBoundingClientRect());
    for (const r of sticky('thead th, thead td')) top = Math.max(top, r.bottom);
    for (const r of sticky('tfoot th, tfoot td')) bottom = Math.min(bottom, r.top);
    const inside = [...box.querySelectorAll(itemSel)].map((it) => {
      const r = it.getBoundingClientRect();
      // 1 px of slack: a scroll position is a whole pixel, boxes are not.
      return r.height > 0 && r.top >= top - 1 && r.bottom <= bottom + 1 && r.left >= left - 1 && r.right <= right + 1;
    });
    return {
      shown: inside.filter(Boolean).length, total: inside.length, last: inside.at(-1) ?? false,
      box: [top, bottom].map(Math.round), scroll: [box.scrollTop, box.scrollHeight, box.clientHeight].map(Math.round),
    };
  }, [boxSel, itemSel]);
}

/** Two animation frames: the layout after a resize has been done and painted. */
const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

export async function tableScenarios(t) {
  const { scenario, newPage, assert, visible, log, OUT, URL } = t;
  // Layout checks note their failures and the scenario goes on, so that one run shows
  // every check that fails (e.g. on an older client, with WEB_DIR); `settle` throws.
  let failed = [];
  const check = (cond, message) => {
    if (!cond) failed.push(message);
  };
  const settle = () => {
    const all = failed;
    failed = [];
    assert(all.length === 0, all.join('\n'));
  };

  async function allOnScreen(page, selector, what) {
    const { count, bad } = await offScreen(page, selector);
    check(count > 0, `${what}: nothing matches ${selector}`);
    check(bad.length === 0, `${what} off screen: ${bad.join('; ')}`);
  }

  async function rulesPage(page, how) {
    await page.waitForURL(/\/rules(#.*)?$/);
    await page.locator('h1', { hasText: 'How to play Wizard' }).waitFor();
    const headings = await page.locator('main h2').allTextContents();
    for (const h of ['The deck', 'The rounds', 'Trump', 'Bidding', 'Playing a trick', 'Wizards and Jesters', 'Scoring', 'Table options']) {
      assert(headings.includes(h), `${how}: the rules page has the section ${h}: ${headings}`);
    }
    assert(await page.locator('main').count() === 1, `${how}: one main landmark`);
  }

  /** Follows a link that opens the rules in a new tab; checks and closes that tab. */
  async function rulesInNewTab(page, testid) {
    const [tab] = await Promise.all([page.context().waitForEvent('page'), page.getByTestId(testid).click()]);
    await rulesPage(tab, testid);
    await tab.close();
  }

  const { context, page } = await newPage('rita', { width: 1280, height: 800 });

  await scenario('rules page: it loads, readable at 375 px, and the links from home, lobby and game reach it', async () => {
    const direct = await page.goto(`${URL}/rules`);
    assert(direct.status() === 200, `/rules answers ${direct.status()}`);
    await rulesPage(page, '/rules');
    await page.setViewportSize({ width: 375, height: 812 });
    await frames(page);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert(width <= 375, `no sideways scrolling on a phone: ${width}`);
    await page.screenshot({ path: join(OUT, 'rules-phone.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: join(OUT, 'rules.png') });

    await page.goto(URL);
    await page.getByTestId('home-rules-link').click();
    await rulesPage(page, 'home');
    await page.goBack();

    await page.getByTestId('name-input').fill('Rita');
    await page.getByTestId('create-lobby').click();
    await visible(page, 'lobby-code');
    await rulesInNewTab(page, 'lobby-rules-link');
    // Six seats: the lobby's longest list, and the widest score sheet.
    for (let i = 1; i <= 5; i++) {
      await page.getByTestId('add-ai').click();
      await page.locator('#seats li').nth(i).waitFor();
    }
    await page.waitForFunction(() => !document.querySelector('[data-testid="start-game"]').disabled);
    await allOnScreen(page, '[data-testid="start-game"]', 'Start game in the lobby at 1280x800');
    await page.screenshot({ path: join(OUT, 'lobby-six.png') });
    await page.getByTestId('start-game').click();
    await visible(page, 'turn-indicator');
    await rulesInNewTab(page, 'rules-link');
    settle();
  });

  await scenario('bidding at 1280x800 and 375x812: hand and bids on screen, no stale trick, panels inside the window', async () => {
    // Whenever bid buttons appear, the page notes the round and how many cards lie in
    // the middle at that moment (a MutationObserver sees the DOM of each render).
    await page.evaluate(() => {
      window.bidShows = [];
      let shown = false;
      new MutationObserver(() => {
        const now = !!document.querySelector('#action-bar [data-testid^="bid-"]');
        if (now && !shown) {
          window.bidShows.push({
            round: document.querySelector('.round-pill')?.textContent ?? '',
            trick: document.querySelectorAll('#trick .trick-card').length,
          });
        }
        shown = now;
      }).observe(document.getElementById('action-bar'), { childList: true, subtree: true });
    });
    // Play (first offered choice) until we are to bid in round 2 or later.
    for (;;) {
      await page.locator(OFFERED).first().waitFor({ timeout: 30000 });
      const round = Number(/Round (\d+)/.exec(await page.locator('.round-pill').textContent())?.[1] ?? 0);
      const bidding = await page.locator('#action-bar [data-testid^="bid-"]:not(:disabled)').count();
      if (round >= 2 && bidding) break;
      const id = await page.locator(OFFERED).first().getAttribute('data-testid');
      await page.getByTestId(id).click();
      await page.waitForFunction((i) => !document.querySelector(`[data-testid="${i}"]:not(:disabled)`), id);
    }
    // The previous round's last trick is gone from the table the moment our bid
    // buttons show (it came with round_started, whoever bids first).
    const shows = await page.evaluate(() => window.bidShows);
    check(shows.some((b) => !b.round.startsWith('Round 1 ')), `bid buttons seen in round 2: ${JSON.stringify(shows)}`);
    check(shows.every((b) => b.trick === 0), `the table is empty whenever the bid buttons show: ${JSON.stringify(shows)}`);
    const note = (await page.locator('#trick .trick-note').textContent()) ?? '';
    check(note === 'Bidding', `the middle says Bidding: ${note}`);
    const lastTrick = (await page.locator('.side-panel', { has: page.locator('#last-trick') }).textContent()) ?? '';
    check(lastTrick.includes('Last trick of round 1') && lastTrick.includes('won it'), `side panel: round 1's last trick until one is won in round 2: ${lastTrick}`);

    await allOnScreen(page, '#hand li', 'the hand at 1280x800');
    await allOnScreen(page, '#action-bar button', 'the bid buttons at 1280x800');
    await allOnScreen(page, '.side-column > :not([hidden])', 'the side panels at 1280x800');
    const sheet = await page.evaluate(() => {
      const wrap = document.getElementById('scoreboard');
      const cells = [...wrap.querySelectorAll('thead th')].map((c) => c.getBoundingClientRect().right);
      return { right: wrap.getBoundingClientRect().right, last: Math.max(...cells), scroll: wrap.scrollWidth - wrap.clientWidth };
    });
    check(sheet.last <= sheet.right + 0.5 && sheet.scroll <= 0, `the score sheet's last column is inside its panel: ${JSON.stringify(sheet)}`);
    await page.screenshot({ path: join(OUT, 'bidding.png') });

    await page.setViewportSize({ width: 375, height: 812 });
    await frames(page);
    await allOnScreen(page, '#hand li', 'the hand at 375x812');
    await allOnScreen(page, '#action-bar button', 'the bid buttons at 375x812');
    const cut = await page.evaluate(() => [...document.querySelectorAll('.plate-name')]
      .filter((el) => el.scrollWidth > el.clientWidth + 0.5).map((el) => el.textContent));
    check(cut.length === 0, `names cut short on the phone: ${cut}`);
    await page.screenshot({ path: join(OUT, 'bidding-phone.png') });
    await page.setViewportSize({ width: 1280, height: 800 });
    await frames(page);
    settle();
  });

  await scenario('your own card on the table: its "You" label is clear of your seat', async () => {
    // Bid, then play when asked; the moment our card is in the middle, compare boxes.
    for (;;) {
      await page.locator(OFFERED).first().waitFor({ timeout: 30000 });
      const id = await page.locator(OFFERED).first().getAttribute('data-testid');
      await page.getByTestId(id).click();
      if (id.startsWith('card-')) break;
      await page.waitForFunction((i) => !document.querySelector(`[data-testid="${i}"]:not(:disabled)`), id);
    }
    const boxes = await (await page.waitForFunction(() => {
      const who = [...document.querySelectorAll('#trick .trick-who')].find((el) => el.textContent === 'You');
      if (!who) return null;
      const r = (el) => { const b = el.getBoundingClientRect(); return { l: b.left, t: b.top, r: b.right, b: b.bottom }; };
      const style = getComputedStyle(who);
      return { label: r(who), seat: r(document.querySelector('.seat-plate.seat-you')), shown: style.visibility === 'visible' && style.display !== 'none' };
    })).jsonValue();
    const overlap = !(boxes.label.r <= boxes.seat.l || boxes.label.l >= boxes.seat.r || boxes.label.b <= boxes.seat.t || boxes.label.t >= boxes.seat.b);
    assert(!overlap && boxes.shown, `the You label is visible: ${JSON.stringify(boxes)}`);
    await context.close();
  });

  await scenario('turn alerts: a hidden tab\'s title on your turn, the sound toggle remembered', async () => {
    const s = await newPage('tess', { width: 1280, height: 800 });
    const p = s.page;
    // Visibility as the page sees it, set by the test; and every oscillator started.
    await p.addInitScript(() => {
      window.testHidden = false;
      Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => window.testHidden });
      Object.defineProperty(Document.prototype, 'visibilityState', { configurable: true, get: () => (window.testHidden ? 'hidden' : 'visible') });
      window.oscillators = 0;
      const start = OscillatorNode.prototype.start;
      OscillatorNode.prototype.start = function (...a) {
        window.oscillators += 1;
        return start.apply(this, a);
      };
    });
    const setHidden = (hidden) => p.evaluate((h) => {
      window.testHidden = h;
      document.dispatchEvent(new Event('visibilitychange'));
    }, hidden);
    const players = [
      { id: 'aaaaaaaaaaaa', name: 'Tess', is_ai: false, connected: true },
      { id: 'bbbbbbbbbbbb', name: 'Merlin', is_ai: true, connected: true },
      { id: 'cccccccccccc', name: 'Morgana', is_ai: true, connected: true },
    ];
    const lobby = {
      code: 'ABCDEF', status: 'playing', host_id: 'aaaaaaaaaaaa', players, min_players: 3, max_players: 6,
      ai_available: true, options: { hidden_bids: false, bid_restriction: 'none', turn_seconds: 0 },
    };
    const state = (toAct) => ({
      type: 'state', lobby, events: [],
      game: {
        you: 0,
        observation: {
          players: 3, round: 1, rounds: 20, phase: 'bidding', dealer: 2, to_act: toAct, turn_deadline_ms: null,
          trump_card: 's9', trump_suit: 'spades', hand: ['h4'], bids: [null, null, null], has_bid: [false, false, false],
          tricks_won: [0, 0, 0], trick: [], leader: 0, last_trick: null, played: [], scores: [0, 0, 0], round_scores: [],
          options: lobby.options, legal_actions: toAct === 0 ? [0, 1].map((bid) => ({ kind: 'bid', bid })) : [],
        },
      },
    });
    let server = null;
    await p.routeWebSocket(/\/ws$/, (ws) => {
      server = ws;
      ws.onMessage((raw) => {
        if (JSON.parse(raw).type !== 'hello') return;
        ws.send(JSON.stringify({ type: 'welcome', player_id: 'aaaaaaaaaaaa', token: 't'.repeat(32), name: 'Tess' }));
        ws.send(JSON.stringify({ type: 'server_status', load: 'normal', accepting_games: true }));
        ws.send(JSON.stringify(state(1)));
      });
    });
    await p.goto(URL);
    await p.locator('#turn-indicator', { hasText: 'Merlin is bidding' }).waitFor();
    const title = () => p.evaluate(() => document.title);
    assert((await title()) === 'Wizard', `title while others play: ${await title()}`);

    // Hidden, then our turn: the title says so. Back in front: the plain title; hidden
    // again while still our turn: the alert; no longer our turn: the plain title.
    await setHidden(true);
    assert((await title()) === 'Wizard', 'hidden, not our turn: the plain title');
    server.send(JSON.stringify(state(0)));
    await p.waitForFunction(() => document.title === '● Your turn – Wizard');
    await setHidden(false);
    await p.waitForFunction(() => document.title === 'Wizard');
    await setHidden(true);
    await p.waitForFunction(() => document.title === '● Your turn – Wizard');
    server.send(JSON.stringify(state(2)));
    await p.waitForFunction(() => document.title === 'Wizard');
    await setHidden(false);
    assert((await p.evaluate(() => window.oscillators)) === 0, 'no sound while the sound is off');

    // Sound: off until turned on, a sample chime when turned on, then a chime when our
    // turn comes in a hidden tab; the choice is stored.
    const toggle = p.getByTestId('sound-toggle');
    assert((await toggle.getAttribute('aria-pressed')) === 'false', 'sound starts off');
    await toggle.click();
    assert((await toggle.getAttribute('aria-pressed')) === 'true', 'sound on');
    assert((await p.evaluate(() => localStorage.getItem('wizard.sound'))) === 'on', 'the choice is stored');
    await p.waitForFunction(() => window.oscillators >= 2);
    const sample = await p.evaluate(() => window.oscillators);
    await setHidden(true);
    server.send(JSON.stringify(state(0)));
    await p.waitForFunction(() => document.title === '● Your turn – Wizard');
    await p.waitForFunction((n) => window.oscillators >= n + 2, sample);
    server.send(JSON.stringify(state(1)));
    await p.waitForFunction(() => document.title === 'Wizard');
    await setHidden(false);
    await p.screenshot({ path: join(OUT, 'sound-on.png') });

    // The choice survives a reload; turned off, it stays off.
    await p.reload();
    await p.locator('#turn-indicator', { hasText: 'Merlin is bidding' }).waitFor();
    assert((await toggle.getAttribute('aria-pressed')) === 'true', 'sound still on after a reload');
    await toggle.click();
    assert((await p.evaluate(() => localStorage.getItem('wizard.sound'))) === 'off', 'off is stored');
    log('  title and sound alerts checked');
    await s.context.close();
  });

  await scenario('side panels at 1366x768 and 1280x800: 5 lines of the log and 5 rows of the score sheet late in a game; Watching only when someone watches; a new round clears the table at once', async () => {
    // A scripted server (routeWebSocket): round 20 of 20, our bid first, with the
    // previous round's last trick, its score and the new round in one state, as the
    // server sends them. The longest score sheet, 21 bid buttons and 20 cards in hand.
    const s = await newPage('sol', { width: 1366, height: 768 });
    const p = s.page;
    const players = [
      { id: 'aaaaaaaaaaaa', name: 'Sol', is_ai: false, connected: true },
      { id: 'bbbbbbbbbbbb', name: 'Merlin', is_ai: true, connected: true },
      { id: 'cccccccccccc', name: 'Morgana', is_ai: true, connected: true },
    ];
    const options = { hidden_bids: false, bid_restriction: 'none', turn_seconds: 0 };
    const lobby = (spectators) => ({
      code: 'ABCDEF', status: 'playing', host_id: 'aaaaaaaaaaaa', players, min_players: 3, max_players: 6,
      ai_available: true, options, spectators,
    });
    const roundScores = Array.from({ length: 19 }, (_, r) => [0, 1, 2].map((i) => ((r * 7 + i * 3) % 5 === 0 ? -10 * (1 + ((r + i) % 3)) : 20 + 10 * ((r + 2 * i) % 4))));
    const scores = [0, 1, 2].map((i) => roundScores.reduce((sum, row) => sum + row[i], 0));
    const hand = [...Array.from({ length: 13 }, (_, k) => `s${k + 2}`), 'h2', 'h3', 'h4', 'h5', 'h6', 'W1', 'J1'];
    const lastTrick = [{ player: 1, card: 'd7' }, { player: 2, card: 'd12' }, { player: 0, card: 'W2' }];
    const state = (spectators, events) => ({
      type: 'state', lobby: lobby(spectators), events,
      game: {
        you: 0,
        observation: {
          players: 3, round: 20, rounds: 20, phase: 'bidding', dealer: 1, to_act: 0, turn_deadline_ms: null,
          trump_card: null, trump_suit: null, hand, bids: [null, null, 3], has_bid: [false, false, true],
          tricks_won: [0, 0, 0], trick: [], leader: 2, last_trick: null, played: [], scores, round_scores: roundScores,
          options, legal_actions: Array.from({ length: 21 }, (_, bid) => ({ kind: 'bid', bid })),
        },
      },
    });
    const events = [
      ...lastTrick.map((pc) => ({ type: 'card_played', ...pc })),
      { type: 'trick_completed', winner: 0, cards: lastTrick },
      { type: 'round_finished', bids: [1, 0, 2], tricks: [1, 0, 2], deltas: roundScores[18], scores },
      { type: 'round_started', round: 20, dealer: 1, trump_card: null, trump_suit: null },
      { type: 'bid_made', player: 2, bid: 3 },
    ];
    let server = null;
    await p.routeWebSocket(/\/ws$/, (ws) => {
      server = ws;
      ws.onMessage((raw) => {
        if (JSON.parse(raw).type !== 'hello') return;
        ws.send(JSON.stringify({ type: 'welcome', player_id: 'aaaaaaaaaaaa', token: 't'.repeat(32), name: 'Sol' }));
        ws.send(JSON.stringify({ type: 'server_status', load: 'normal', accepting_games: true }));
        ws.send(JSON.stringify(state([], events)));
      });
    });
    await p.goto(URL);
    await visible(p, 'bid-20');
    // The state that ended round 19 also began round 20, and we bid first: the trick is
    // off the table at once; the side panel keeps it, said to be round 19's.
    const inMiddle = await p.locator('#trick .trick-card').count();
    check(inMiddle === 0, `no card in the middle when our bid buttons show: ${inMiddle}`);
    const side = (await p.locator('.side-panel', { has: p.locator('#last-trick') }).textContent()) ?? '';
    check(side.includes('Last trick of round 19') && side.includes('You won it'), `the side panel keeps round 19's last trick: ${side}`);

    const panels = async (size, watching) => {
      await frames(p);
      const what = `at ${size}${watching ? ' with a spectator' : ''}`;
      const logLines = await shownItems(p, '#event-log', 'li');
      check(logLines.shown >= 5 && logLines.last, `the event log shows 5 lines and the newest ${what}: ${JSON.stringify(logLines)}`);
      const rows = await shownItems(p, '#scoreboard', 'tbody tr');
      check(rows.total === 20, `the score sheet has 19 rounds and the current one ${what}: ${rows.total}`);
      check(rows.shown >= 5 && rows.last, `the score sheet shows 5 rows and the current round ${what}: ${JSON.stringify(rows)}`);
      log(`  ${what}: ${rows.shown} of ${rows.total} score rows, ${logLines.shown} of ${logLines.total} log lines in sight`);
      await allOnScreen(p, '#hand li', `the hand of 20 cards ${what}`);
      await allOnScreen(p, '#action-bar button', `the 21 bid buttons ${what}`);
      await allOnScreen(p, '.side-column > :not([hidden])', `the side panels ${what}`);
      const box = await p.locator('.side-column section', { has: p.getByTestId('game-spectators') }).boundingBox();
      if (watching) {
        const eye = p.getByTestId('game-spectators').locator('li', { hasText: 'Zed' }).locator('svg[role="img"][aria-label="Spectator"]');
        check(await eye.isVisible(), `the spectator's eye is an SVG with a label ${what}`);
      } else {
        check(box === null, `no Watching panel while nobody watches ${what}: ${JSON.stringify(box)}`);
      }
    };
    await panels('1366x768', false);
    await p.screenshot({ path: join(OUT, 'table-1366x768.png') });
    server.send(JSON.stringify(state(['Zed'], [])));
    await p.getByTestId('game-spectators').locator('li', { hasText: 'Zed' }).waitFor({ state: 'visible' });
    await panels('1366x768', true);
    await p.setViewportSize({ width: 1280, height: 800 });
    await panels('1280x800', true);
    await p.screenshot({ path: join(OUT, 'table-1280x800.png') });
    server.send(JSON.stringify(state([], [])));
    await p.getByTestId('game-spectators').locator('li', { hasText: 'Zed' }).waitFor({ state: 'detached' });
    await panels('1280x800', false);
    // A large screen keeps what it had.
    await p.setViewportSize({ width: 1920, height: 1080 });
    await panels('1920x1080', false);
    await p.screenshot({ path: join(OUT, 'table-1920x1080.png') });
    await s.context.close();
    settle();
  });

  await scenario('a click whose press and release straddle a state (another seat bids, a spectator comes) still bids and plays', async () => {
    // Scripted: hidden bids, so Merlin's bid arrives while we bid; then a spectator's
    // arrival while we play. Each time the mouse is pressed on a button, the state
    // comes and is drawn, then the mouse is released: the click must not be lost.
    const s = await newPage('cora', { width: 1280, height: 800 });
    const p = s.page;
    const players = [
      { id: 'aaaaaaaaaaaa', name: 'Cora', is_ai: false, connected: true },
      { id: 'bbbbbbbbbbbb', name: 'Merlin', is_ai: true, connected: true },
      { id: 'cccccccccccc', name: 'Bob', is_ai: false, connected: true },
    ];
    const options = { hidden_bids: true, bid_restriction: 'none', turn_seconds: 0 };
    const state = (over, spectators = [], events = []) => ({
      type: 'state', events,
      lobby: { code: 'ABCDEF', status: 'playing', host_id: 'aaaaaaaaaaaa', players, min_players: 3, max_players: 6, ai_available: true, options, spectators },
      game: {
        you: 0,
        observation: {
          players: 3, round: 2, rounds: 20, phase: 'bidding', dealer: 2, to_act: 0, turn_deadline_ms: null,
          trump_card: 's9', trump_suit: 'spades', hand: ['h4', 's14'], bids: [null, null, null], has_bid: [false, false, false],
          tricks_won: [0, 0, 0], trick: [], leader: 0, last_trick: null, played: [], scores: [20, -10, 30], round_scores: [[20, -10, 30]],
          options, legal_actions: [0, 1, 2].map((bid) => ({ kind: 'bid', bid })),
          ...over,
        },
      },
    });
    const actions = [];
    let onAction = null;
    let server = null;
    await p.routeWebSocket(/\/ws$/, (ws) => {
      server = ws;
      ws.onMessage((raw) => {
        const m = JSON.parse(raw);
        if (m.type === 'hello') {
          ws.send(JSON.stringify({ type: 'welcome', player_id: 'aaaaaaaaaaaa', token: 't'.repeat(32), name: 'Cora' }));
          ws.send(JSON.stringify({ type: 'server_status', load: 'normal', accepting_games: true }));
          ws.send(JSON.stringify(state({})));
        } else if (m.type === 'action') {
          actions.push(JSON.stringify(m.action));
          onAction?.();
        }
      });
    });
    /** Presses the mouse on `testid`, has the server send `msg` and waits until `drawn`
     *  is on the page, releases the mouse; then the action sent, or null after 5 s. */
    const straddle = async (testid, msg, drawn) => {
      const box = await p.getByTestId(testid).boundingBox();
      const sent = new Promise((resolve) => {
        onAction = () => resolve(actions.at(-1));
      });
      await p.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await p.mouse.down();
      server.send(JSON.stringify(msg));
      await drawn.waitFor();
      await p.mouse.up();
      return Promise.race([sent, p.waitForTimeout(5000).then(() => null)]);
    };
    await p.goto(URL);
    await visible(p, 'bid-1');
    const merlin = p.locator('.seat-plate', { hasText: 'Merlin' });
    const bid = await straddle('bid-1', state({ has_bid: [false, true, false] }, [], [{ type: 'bid_made', player: 1 }]),
      merlin.locator('.stat-bid', { hasText: 'Has bid' }));
    assert(bid === '{"kind":"bid","bid":1}', `the bid pressed as Merlin's bid came was sent: ${bid}`);

    server.send(JSON.stringify(state({
      phase: 'playing', bids: [1, 0, 1], has_bid: [true, true, true], legal_actions: [{ kind: 'play', card: 'h4' }, { kind: 'play', card: 's14' }],
    })));
    await p.getByTestId('card-s14').and(p.locator(':enabled')).waitFor();
    const card = await straddle('card-s14', state({
      phase: 'playing', bids: [1, 0, 1], has_bid: [true, true, true], legal_actions: [{ kind: 'play', card: 'h4' }, { kind: 'play', card: 's14' }],
    }, ['Zed']), p.getByTestId('game-spectators').locator('li', { hasText: 'Zed' }));
    assert(card === '{"kind":"play","card":"s14"}', `the card pressed as a spectator came was played: ${card}`);
    await s.context.close();
  });
}
