// End-to-end scenarios of public tables and quick play (run by e2e.mjs; PROTOCOL.md
// 7.2): Play now shows the waiting view with the time waited and a cancel button, three
// players who play now at a table of 3 are seated together and their game starts; a
// host makes the lobby public and another player finds it in the open tables and joins.

import { join } from 'node:path';

export async function quickScenarios(t) {
  const { scenario, newPage, assert, visible, text, log, OUT, URL } = t;

  await scenario('Quick play: waiting view, cancel, then three players seated together', async () => {
    const pages = [];
    // The lobbies the first player's server sends, to check who was seated.
    const lobbies = [];
    for (const name of ['Qa', 'Qb', 'Qc']) {
      const { context, page } = await newPage(`quick-${name}`, { width: 1280, height: 800 });
      if (name === 'Qa') {
        page.on('websocket', (ws) => ws.on('framereceived', (f) => {
          try {
            const m = JSON.parse(f.payload);
            if (m.type === 'state' && m.lobby) lobbies.push(m.lobby);
          } catch { /* not ours to judge */ }
        }));
      }
      await page.goto(URL);
      await page.getByTestId('name-input').fill(name);
      await page.getByTestId('quick-seats').selectOption('3');
      pages.push({ context, page });
    }
    const first = pages[0].page;
    await first.getByTestId('play-now').click();
    await visible(first, 'quick-waiting');
    assert(!(await first.getByTestId('play-now').isVisible()), 'Play now is hidden while waiting');
    assert(/Waiting for players: \d+ s/.test(await first.locator('#quick-waiting p').textContent()), 'the time waited is shown');
    // The time waited ticks.
    await first.waitForFunction(() => document.querySelector('[data-testid="quick-waited"]').textContent !== '0 s', null, { timeout: 5000 });
    log(`  waited ${await text(first, 'quick-waited')}`);
    await first.screenshot({ path: join(OUT, 'quick-waiting.png') });
    await first.getByTestId('quick-cancel').click();
    await visible(first, 'play-now');
    assert(!(await first.getByTestId('quick-waiting').isVisible()), 'the waiting view is gone after cancel');
    for (const { page } of pages) await page.getByTestId('play-now').click();
    for (const { page } of pages) await visible(page, 'turn-indicator', 15000);
    const seated = lobbies[lobbies.length - 1];
    const names = seated.players.map((p) => `${p.name}${p.is_ai ? ' (AI)' : ''}`).sort();
    assert(JSON.stringify(names) === JSON.stringify(['Qa', 'Qb', 'Qc']), `seated together: ${names.join(', ')}`);
    assert(seated.status === 'playing' && seated.public === true, 'a public table, its game running');
    log(`  seated: ${names.join(', ')}`);
    for (const { context } of pages) await context.close();
  });

  await scenario('Public tables: a host makes the lobby public, another player finds and joins it', async () => {
    const host = await newPage('pub-host', { width: 1280, height: 800 });
    await host.page.goto(URL);
    await host.page.getByTestId('name-input').fill('Publia');
    await host.page.getByTestId('create-lobby').click();
    await visible(host.page, 'lobby-code');
    const code = await text(host.page, 'lobby-code');
    await host.page.getByTestId('option-public').check();
    const guest = await newPage('pub-guest', { width: 1280, height: 800 });
    await guest.page.goto(URL);
    await guest.page.getByTestId('name-input').fill('Gus');
    // The option reached the server before the list is asked: the host's own view says so.
    await host.page.waitForFunction(() => document.querySelector('[data-testid="option-public"]').checked);
    await guest.page.getByTestId('tables-refresh').click();
    await visible(guest.page, `table-${code}`);
    const row = guest.page.getByTestId('tables-list').locator('li', { has: guest.page.getByTestId(`table-${code}`) });
    const label = await row.textContent();
    assert(label.includes("Publia's table") && label.includes('1 of 6 seats'), `the table is listed: ${label}`);
    assert((await guest.page.getByTestId(`table-${code}`).textContent()).trim() === 'Join', 'a waiting table offers Join');
    await guest.page.screenshot({ path: join(OUT, 'public-tables.png') });
    await guest.page.getByTestId(`table-${code}`).click();
    await visible(guest.page, 'lobby-code');
    assert((await text(guest.page, 'lobby-code')) === code, 'joined the listed table');
    await host.page.locator('#seats li').nth(1).waitFor();
    await host.context.close();
    await guest.context.close();
  });
}
