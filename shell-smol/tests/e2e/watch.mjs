// End-to-end scenarios for spectators and table chat (run by e2e.mjs): a
// spectator joins a running 4-player game (two humans, two AI seats, hidden bids) by
// its watch link, sees the table, and sees no hand and no hidden bid in any frame it
// receives nor in its page; the players see the spectator's name. Chat reaches the
// other player and the spectator; `<script>` and `<b>` arrive as text; a mute toggle
// hides a player's lines and is stored; the chat rate limit shows its toast.

import { join } from 'node:path';

export async function watchScenarios(t) {
  const { scenario, newPage, assert, visible, text, log, OUT, URL, stateTracker } = t;
  const ann = await newPage('ann', { width: 1280, height: 800 });
  const bea = await newPage('bea', { width: 1280, height: 800 });
  const zed = await newPage('zed', { width: 1280, height: 800 });
  // Every frame the spectator's page receives, parsed.
  const zedFrames = [];
  // Called (and cleared) after each frame the spectator receives.
  let onZedFrame = [];
  // A `delta` is kept as it came and, after it, the full state it makes (deltas:
  // PROTOCOL.md 7.5), so the checks below read both.
  zed.page.on('websocket', (ws) => {
    const track = stateTracker();
    ws.on('framereceived', (f) => {
      try {
        const m = JSON.parse(f.payload);
        zedFrames.push(m);
        const full = m.type === 'delta' ? track(m) : (track(m), null);
        if (full) zedFrames.push(full);
      } catch {
        zedFrames.push({ type: 'unparsable', raw: String(f.payload) });
      }
      const waiting = onZedFrame;
      onZedFrame = [];
      for (const resolve of waiting) resolve();
    });
  });
  let code = '';
  let started = false;

  await scenario('spectator: joins a running 4-player game by link, no hand or hidden bid in any frame or the DOM; the players see the name', async () => {
    await ann.page.goto(URL);
    await ann.page.getByTestId('name-input').fill('Ann');
    await ann.page.getByTestId('create-lobby').click();
    await visible(ann.page, 'lobby-code');
    code = await text(ann.page, 'lobby-code');
    const watchLink = await ann.page.getByTestId('watch-link').inputValue();
    assert(watchLink.endsWith(`/?watch=${code}`), `watch link beside the invite link: ${watchLink}`);
    assert(await ann.page.getByTestId('watch-link').isVisible(), 'the watch link is shown');
    await ann.page.getByTestId('option-hidden-bids').check();
    await bea.page.goto(`${URL}/?join=${code}`);
    await bea.page.getByTestId('name-input').fill('Bea');
    await bea.page.getByTestId('join-lobby').click();
    await visible(bea.page, 'lobby-code');
    await ann.page.locator('#seats li', { hasText: 'Bea' }).waitFor();
    for (const n of [2, 3]) {
      await ann.page.getByTestId('add-ai').click();
      await ann.page.locator('#seats li').nth(n).waitFor();
    }
    await ann.page.getByTestId('start-game').click();
    for (const p of [ann.page, bea.page]) await p.locator('#hand li').first().waitFor({ state: 'visible' });
    started = true;

    // The spectator follows the watch link.
    await zed.page.goto(watchLink);
    assert((await zed.page.getByTestId('join-code-input').inputValue()) === code, 'the link fills in the code');
    assert(await zed.page.getByTestId('watch-lobby').isVisible(), 'a Watch button beside Join');
    await zed.page.getByTestId('name-input').fill('Zed');
    await zed.page.getByTestId('watch-lobby').click();
    await zed.page.locator('#seats-ring .seat-plate').nth(3).waitFor({ state: 'visible' });
    assert(await zed.page.locator('#felt').isVisible(), 'the spectator sees the table');
    const plates = await zed.page.locator('#seats-ring .seat-plate').allTextContents();
    assert(plates.length === 4 && ['Ann', 'Bea'].every((n) => plates.some((p) => p.includes(n))), `four seats: ${plates}`);
    // Bidding goes round from the dealer's left, and the first dealer is drawn at
    // random: the AI seats bid as soon as their turn comes, the players when this test
    // makes them (a dealer who turned a Wizard chooses trump first). The players take
    // their turns until one of them is to bid while another seat has bid: bids are
    // still hidden then, and the spectator sees that the seat has bid, not what.
    const actionSel = '#action-bar [data-testid^="trump-"]:not(:disabled), #action-bar [data-testid^="bid-"]:not(:disabled)';
    // After a move, wait for the server's state that carries it: the trump suit on the
    // table, or our bid on our own seat. Not for the buttons to go: a dealer who chose
    // trump is asked for a bid in that very state (hidden bids: everyone bids at once),
    // and until that state comes a state sent before our move may bring the same
    // buttons back.
    const moveShown = (page, id) => (id.startsWith('trump-')
      ? page.locator(`#trump-spot[aria-label^="Trump: ${id.slice('trump-'.length)}"]`).waitFor()
      : page.locator('.seat-plate.seat-you .stat-bid', { hasText: new RegExp(`^Bid ${id.slice('bid-'.length)}$`) }).waitFor());
    const never = new Promise(() => {});
    const humanTurn = () => Promise.race([ann.page, bea.page].map((page) => {
      const button = page.locator(actionSel).first();
      // The page whose turn it is not waits in vain; its timeout is not the test's.
      return button.waitFor({ state: 'visible' }).then(() => ({ page, button }), () => never);
    }).concat([zed.page.waitForTimeout(20000).then(() => null)]));
    let bidder = null;
    for (let turns = 0; ; turns++) {
      assert(turns < 4, 'a player was to bid while another seat had bid');
      const turn = await humanTurn();
      assert(turn !== null, 'a player gets a turn in the bidding');
      const { page, button } = turn;
      const id = (await button.getAttribute('data-testid')) ?? '';
      const othersBid = await page.locator('.seat-plate', { hasText: 'Has bid' }).count();
      if (id.startsWith('bid-') && othersBid >= 1) {
        bidder = turn;
        break;
      }
      await page.getByTestId(id).click();
      await moveShown(page, id);
      if (id.startsWith('trump-')) log('  a player dealt, turned a Wizard and chose trump (then bids in the same state)');
    }
    await zed.page.locator('.seat-plate', { hasText: 'Has bid' }).first().waitFor();
    assert(await zed.page.locator('#hand-area').isHidden(), 'no hand area for a spectator');
    assert((await zed.page.locator('#hand li').count()) === 0, 'no cards in the hand');
    assert((await zed.page.locator('#action-bar button').count()) === 0, 'no bid buttons');
    const plateText = (await zed.page.locator('#seats-ring').textContent()) ?? '';
    assert(!/Bid \d/.test(plateText), `no bid shown to the spectator: ${plateText}`);
    // That player bids too: the spectator gets the next state (and, once every seat has
    // bid, the bids revealed: the frame checks below judge each by its phase).
    const nextFrame = new Promise((resolve) => onZedFrame.push(() => resolve(true)));
    await bidder.button.click();
    assert(await Promise.race([nextFrame, zed.page.waitForTimeout(15000).then(() => false)]), 'the spectator saw the bid');

    // The players see who is watching.
    for (const p of [ann.page, bea.page]) {
      const zedItem = p.getByTestId('game-spectators').locator('li', { hasText: 'Zed' });
      await zedItem.waitFor({ state: 'visible' });
      assert(await zedItem.locator('svg[role="img"][aria-label="Spectator"]').isVisible(), 'an eye drawn in SVG, labelled, beside the name');
    }
    // No hand in any frame: every game view is a spectator's.
    const states = zedFrames.filter((f) => f.type === 'state' && f.game);
    assert(states.length >= 2, `the spectator got game states: ${states.length}`);
    for (const s of states) {
      const o = s.game.observation;
      assert(s.game.you === null, 'game.you is null');
      assert(Array.isArray(o.hand) && o.hand.length === 0, `a hand reached the spectator: ${JSON.stringify(o.hand)}`);
      assert(o.legal_actions.length === 0, 'legal actions reached the spectator');
      if (o.phase === 'bidding' && o.options.hidden_bids && o.has_bid.includes(false)) {
        assert(o.bids.every((b) => b === null), `a hidden bid reached the spectator: ${JSON.stringify(o.bids)}`);
      }
    }
    // Nor in a delta as it came: a patch holds no card of a hand and no legal action.
    for (const d of zedFrames.filter((f) => f.type === 'delta')) {
      const o = d.patch?.game?.observation;
      if (!o) continue;
      assert(!Array.isArray(o.hand) || o.hand.length === 0, `a hand reached the spectator in a delta: ${JSON.stringify(o.hand)}`);
      assert(!Array.isArray(o.legal_actions) || o.legal_actions.length === 0, 'legal actions reached the spectator in a delta');
    }
    assert(states.some((s) => s.game.observation.has_bid.some(Boolean) && s.game.observation.has_bid.includes(false)), 'frames while some had bid and some had not');
    // No card of the players' hands is anywhere in the spectator's page.
    const hands = [];
    for (const p of [ann.page, bea.page]) hands.push(...await p.locator('#hand [data-card]').evaluateAll((els) => els.map((e) => e.dataset.card)));
    assert(hands.length === 2, `the players hold a card each: ${hands}`);
    const zedCards = await zed.page.locator('[data-card]').count();
    assert(zedCards === 0, 'no card button in the spectator page');
    await zed.page.screenshot({ path: join(OUT, 'spectator.png') });
    await ann.page.screenshot({ path: join(OUT, 'spectated-player.png') });
    log(`  spectator checked over ${states.length} game states`);
  });

  await scenario('chat: reaches the other player and the spectator, <script> and markup as text, mute, rate-limit toast', async () => {
    assert(started, 'needs the spectator scenario');
    const script = '<script>window.pwned=1</script>';
    const say = async (p, line) => {
      await p.getByTestId('chat-input').fill(line);
      await p.getByTestId('chat-input').press('Enter');
    };
    await say(ann.page, script);
    for (const p of [bea.page, zed.page]) {
      await p.getByTestId('chat-log').locator('.chat-text', { hasText: 'window.pwned' }).waitFor({ state: 'visible' });
      const got = await p.getByTestId('chat-log').locator('.chat-text').last().textContent();
      assert(got === script, `the script tag arrives as text: ${got}`);
      assert((await p.locator('#chat-log script').count()) === 0, 'no script element in the chat');
      assert((await p.evaluate(() => window.pwned)) === undefined, 'the script did not run');
    }
    await say(bea.page, '<b>x</b>');
    await zed.page.getByTestId('chat-log').locator('.chat-text', { hasText: '<b>x</b>' }).waitFor({ state: 'visible' });
    assert((await zed.page.locator('#chat-log b').count()) === 0, 'markup is not rendered');
    const beaLine = await zed.page.getByTestId('chat-log').locator('.chat-line').last().textContent();
    assert(beaLine === 'Bea: <b>x</b>', `the sender's name with the line: ${beaLine}`);
    await say(zed.page, 'hello from the rail');
    for (const p of [ann.page, bea.page]) {
      await p.getByTestId('chat-log').locator('.chat-line', { hasText: 'Zed: hello from the rail' }).waitFor({ state: 'visible' });
    }

    // Mute: Ann hides Bea's lines; the choice is stored; unmuted they come back.
    await ann.page.locator('#chat-mutes-wrap summary').click();
    const muteBea = ann.page.getByTestId('chat-mutes').getByRole('button', { name: 'Mute Bea' });
    await muteBea.click();
    await ann.page.getByTestId('chat-mutes').getByRole('button', { name: 'Unmute Bea' }).waitFor();
    assert((await ann.page.getByTestId('chat-log').locator('.chat-line', { hasText: 'Bea:' }).count()) === 0, 'muted lines hidden');
    const stored = JSON.parse(await ann.page.evaluate(() => localStorage.getItem('wizard.muted')) ?? '[]');
    assert(stored.length === 1, `the mute is stored: ${stored}`);
    await ann.page.getByTestId('chat-mutes').getByRole('button', { name: 'Unmute Bea' }).click();
    await ann.page.getByTestId('chat-log').locator('.chat-line', { hasText: 'Bea: <b>x</b>' }).waitFor({ state: 'visible' });

    // CHAT_RATE (20 a minute, a burst of as many): Zed's lines beyond the burst show the
    // toast. The bucket gains a line every 3 s, so how many pass depends on how long the
    // steps above took: Zed sends until the toast shows, at most 40 lines.
    const toastShown = () => zed.page.getByTestId('toast').isVisible();
    let last = 1;
    for (let i = 2; i <= 40 && !(await toastShown()); i += 1) {
      await say(zed.page, `line ${i}`);
      last = i;
      // Each line's answer (its echo or the refusal) before the next.
      await zed.page.getByTestId('chat-log').locator('.chat-line', { hasText: `Zed: line ${i}` })
        .or(zed.page.getByTestId('toast')).first().waitFor({ state: 'visible' });
    }
    await zed.page.getByTestId('toast').waitFor({ state: 'visible' });
    assert(last >= 21, `the burst of 20 passed first: refused at line ${last}`);
    const toast = await text(zed.page, 'toast');
    assert(toast.includes('chat messages too fast'), `the rate-limit toast: ${toast}`);
    await ann.page.getByTestId('chat-log').locator('.chat-line', { hasText: `Zed: line ${last - 1}` }).waitFor({ state: 'visible' });
    assert((await ann.page.getByTestId('chat-log').locator('.chat-line', { hasText: `Zed: line ${last}` }).count()) === 0, `the refused line ${last} never reached the others`);
    await zed.page.screenshot({ path: join(OUT, 'chat.png') });
  });

  for (const p of [ann, bea, zed]) await p.context.close();

  await scenario('spectator names: a player who joins under a spectator\'s name is numbered, in the seats and in chat', async () => {
    const host = await newPage('names-host');
    const rail = await newPage('names-rail');
    const late = await newPage('names-late');
    await host.page.goto(URL);
    await host.page.getByTestId('name-input').fill('Hal');
    await host.page.getByTestId('create-lobby').click();
    await visible(host.page, 'lobby-code');
    const lobby = await text(host.page, 'lobby-code');
    // The spectator takes "Cy" first.
    await rail.page.goto(`${URL}/?watch=${lobby}`);
    await rail.page.getByTestId('name-input').fill('Cy');
    await rail.page.getByTestId('watch-lobby').click();
    await host.page.getByTestId('lobby-spectators').locator('li', { hasText: 'Cy' }).waitFor({ state: 'visible' });
    // A player asks for "cy": the seat is "cy (2)", and the spectator stays "Cy".
    await late.page.goto(`${URL}/?join=${lobby}`);
    await late.page.getByTestId('name-input').fill('cy');
    await late.page.getByTestId('join-lobby').click();
    const seat = host.page.locator('#seats li', { hasText: 'cy (2)' });
    await seat.waitFor({ state: 'visible' });
    assert((await seat.textContent()).includes('cy (2)'), `the seat is numbered: ${await seat.textContent()}`);
    const watching = (await host.page.getByTestId('lobby-spectators').locator('li').allTextContents()).map((x) => x.trim());
    assert(JSON.stringify(watching) === JSON.stringify(['Cy']), `the spectator keeps its name: ${watching}`);
    // Their chat lines carry the two names.
    await late.page.getByTestId('chat-input').fill('seated');
    await late.page.getByTestId('chat-input').press('Enter');
    await rail.page.getByTestId('chat-input').fill('watching');
    await rail.page.getByTestId('chat-input').press('Enter');
    for (const [who, line] of [['cy (2)', 'seated'], ['Cy', 'watching']]) {
      await host.page.getByTestId('chat-log').locator('.chat-line', { hasText: `${who}: ${line}` }).waitFor({ state: 'visible' });
    }
    for (const p of [host, rail, late]) await p.context.close();
  });
}
