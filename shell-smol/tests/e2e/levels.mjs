// End-to-end scenario of the AI levels (run by e2e.mjs; PROTOCOL.md 6.5): the
// host picks Easy and Strong for two AI seats, the lobby shows each seat's level (and
// the server's lobby view names it), then the game starts and the AI seats play.

import { join } from 'node:path';

const OFFERED = '#action-bar [data-testid^="bid-"]:not(:disabled), #action-bar [data-testid^="trump-"]:not(:disabled), #hand [data-testid^="card-"]:not(:disabled)';

export async function levelScenarios(t) {
  const { scenario, newPage, assert, visible, log, OUT, URL, stateTracker } = t;

  await scenario('AI levels: the host adds an Easy and a Strong AI, the lobby shows both, the game plays', async () => {
    const { context, page } = await newPage('lev', { width: 1280, height: 800 });
    // The lobby as the server sends it, to check the levels on the wire too.
    const lobbies = [];
    page.on('websocket', (ws) => {
      const track = stateTracker();
      ws.on('framereceived', (f) => {
        try {
          const m = track(JSON.parse(f.payload));
          if (m && m.lobby) lobbies.push(m.lobby);
        } catch { /* not ours to judge */ }
      });
    });
    await page.goto(URL);
    await page.getByTestId('name-input').fill('Lev');
    await page.getByTestId('create-lobby').click();
    await visible(page, 'lobby-code');
    for (const [i, level] of [[1, 'easy'], [2, 'strong']]) {
      await page.getByTestId('ai-level').selectOption(level);
      await page.getByTestId('add-ai').click();
      await page.locator('#seats li').nth(i).waitFor();
    }
    const rows = page.locator('#seats li');
    const shown = [];
    for (let i = 0; i < 3; i++) {
      const badge = rows.nth(i).locator('[data-testid^="level-"]');
      shown.push((await badge.count()) ? (await badge.textContent()).trim() : null);
      if (i > 0) assert(await badge.isVisible(), `seat ${i}'s level badge is visible`);
    }
    assert(JSON.stringify(shown) === JSON.stringify([null, 'Easy', 'Strong']), `levels shown in the lobby: ${JSON.stringify(shown)}`);
    const last = lobbies[lobbies.length - 1];
    const wire = last.players.map((p) => p.level ?? null);
    assert(JSON.stringify(wire) === JSON.stringify([null, 'easy', 'strong']), `levels in the lobby view: ${JSON.stringify(wire)}`);
    await page.screenshot({ path: join(OUT, 'lobby-levels.png') });

    await page.getByTestId('start-game').click();
    await visible(page, 'turn-indicator');
    // Play the first offered choice until round 2: both AI seats have bid and played.
    for (;;) {
      await page.locator(OFFERED).first().waitFor({ timeout: 30000 });
      const round = Number(/Round (\d+)/.exec(await page.locator('.round-pill').textContent())?.[1] ?? 0);
      if (round >= 2) break;
      const id = await page.locator(OFFERED).first().getAttribute('data-testid');
      await page.getByTestId(id).click();
      await page.waitForFunction((i) => !document.querySelector(`[data-testid="${i}"]:not(:disabled)`), id);
    }
    log('  an Easy and a Strong AI played round 1');
    await context.close();
  });
}
