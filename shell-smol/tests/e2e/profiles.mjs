// End-to-end scenario of profiles (run by e2e.mjs; PROTOCOL.md 7.1 and 7.3): a profile
// created on the home page survives a reload (its key in localStorage), plays a rated
// game against five AI seats to the end (a table of six has 10 rounds), sees its rating
// and the change in the lobby and at the end, opens its profile page and the
// leaderboard, is forgotten by the browser, signs in again in a fresh browser from the
// key link (the key leaves the address bar), and is deleted there after a confirmation.

import { join } from 'node:path';

/** The number in a rating text such as "Rating 1.23" or "rating 1.23 (+1.23)". */
function figures(text) {
  return [...text.matchAll(/[+-]?\d+(?:\.\d+)?/g)].map((m) => Number(m[0]));
}

export async function profileScenarios(t) {
  const { scenario, newPage, assert, visible, text, log, OUT, URL, playToEnd } = t;

  await scenario('profiles: create, reload, a rated game, profile page, leaderboard, forget, key link, delete', async () => {
    const { context, page } = await newPage('prof');
    await page.goto(URL);
    await page.getByTestId('name-input').fill('Percival');
    await visible(page, 'create-profile');
    await page.getByTestId('create-profile').click();
    await visible(page, 'profile-name');
    assert(await text(page, 'profile-name') === 'Percival', 'signed in as the new profile');
    assert(await text(page, 'profile-rating') === '0', `a new profile's rating is 0: ${await text(page, 'profile-rating')}`);
    const key = await page.evaluate(() => localStorage.getItem('wizard.profile_key'));
    assert(/^[A-Za-z0-9_-]{32,}$/.test(key ?? ''), 'the key is kept in localStorage');

    // The profile survives a reload (and so a closed browser: localStorage).
    await page.reload();
    await visible(page, 'profile-name');
    assert(await text(page, 'profile-name') === 'Percival', 'still signed in after a reload');
    assert(await page.getByTestId('create-profile').isHidden(), 'no "create" while signed in');

    // A rated game against five AI seats: the lobby shows our rating.
    await page.getByTestId('create-lobby').click();
    await visible(page, 'lobby-code');
    for (let i = 1; i <= 5; i++) {
      await page.getByTestId('add-ai').click();
      await page.locator('#seats li').nth(i).waitFor();
    }
    const badge = page.locator('#seats li').first().locator('[data-testid^="rating-"]');
    await badge.waitFor();
    assert((await badge.textContent()).trim() === 'Rating 0', `our seat's rating: ${await badge.textContent()}`);
    await page.getByTestId('start-game').click();
    await visible(page, 'turn-indicator');
    const actions = await playToEnd(page);
    log(`  ${actions} actions clicked to the end of a rated game`);
    await visible(page, 'ranking');
    const mine = page.locator('.rank-you [data-testid^="rating-change-"]');
    await mine.waitFor();
    const shown = (await mine.textContent()).trim();
    const [after, change] = figures(shown);
    assert(/^rating -?\d+(\.\d+)? \([+-]\d+(\.\d+)?\)$/.test(shown), `the new rating and its change: ${shown}`);
    assert(change !== 0 && Math.abs(after - change) < 0.011, `from 0, the change is the rating: ${shown}`);
    assert(await page.locator('#ranking [data-testid^="rating-change-"]').count() === 1, 'only the profile seat is rated');
    await page.screenshot({ path: join(OUT, 'ranking-rated.png') });

    // Home again: the card shows the new rating and the game.
    await page.locator('#end-leave').click();
    await visible(page, 'profile-name');
    await page.waitForFunction((r) => document.querySelector('[data-testid="profile-games"]')?.textContent === '1 rated game'
      && Number(document.querySelector('[data-testid="profile-rating"]')?.textContent) === r, after);

    // The profile page.
    const href = await page.getByTestId('profile-page-link').getAttribute('href');
    assert(/^\/\?profile=[0-9a-f]{12}$/.test(href), `the profile page's address: ${href}`);
    const id = href.slice('/?profile='.length);
    await page.getByTestId('profile-page-link').click();
    await visible(page, 'profile-page-name');
    assert(await text(page, 'profile-page-name') === 'Percival', 'the page names the profile');
    assert(Number(await text(page, 'profile-page-rating')) === after, 'the page shows the rating');
    assert(await text(page, 'profile-page-games') === '1', 'the page counts the game');
    // The recent games (the store's history, written a moment after the game's end).
    for (let i = 0; i < 20 && (await page.getByTestId('recent-game').count()) === 0; i++) {
      await page.waitForTimeout(250);
      await page.reload();
      await visible(page, 'profile-page-name');
    }
    assert(await page.getByTestId('recent-game').count() === 1, 'the rated game is among the recent games');
    const row = page.getByTestId('recent-game').first();
    const cells = await row.locator('td').allTextContents();
    assert(cells[3].startsWith('Percival, ') && cells[3].split(', ').length === 6, `the game's players: ${cells[3]}`);
    assert(/^[1-6]$/.test(cells[1]) && Number.isFinite(Number(cells[2])), `place and score: ${cells}`);
    const replay = await row.locator('a').getAttribute('href');
    assert(/^\/\?replay=[0-9a-f]+$/.test(replay), `a recent game links to its replay: ${replay}`);
    await page.screenshot({ path: join(OUT, 'profile-page.png') });
    // The link opens the replay viewer on that game.
    await row.locator('a').click();
    await visible(page, 'replay');

    // The leaderboard: the AI levels' fixed ratings; one game is not enough to be listed.
    await page.goto(`${URL}/?leaderboard`);
    await visible(page, 'leaderboard-ai-strong');
    for (const level of ['easy', 'normal', 'strong']) {
      const cells = await page.getByTestId(`leaderboard-ai-${level}`).locator('td').allTextContents();
      assert(cells.length === 4 && Number.isFinite(Number(cells[1])), `${level}: ${cells}`);
    }
    const listed = await page.locator('[data-testid="leaderboard-profiles"]', { hasText: 'Percival' }).count();
    assert(listed === 0, 'a profile with fewer than 5 rated games is not listed');
    await page.screenshot({ path: join(OUT, 'leaderboard.png') });

    // Forget: a guest again, in this browser only.
    await page.goto(URL);
    await visible(page, 'profile-name');
    const link = await page.getByTestId('profile-key-link').inputValue();
    assert(link === `${new globalThis.URL(URL).origin}/#key=${key}`, `the key link: ${link}`);
    await page.getByTestId('forget-profile').click();
    await visible(page, 'create-profile');
    assert(await page.evaluate(() => localStorage.getItem('wizard.profile_key')) === null, 'the key is forgotten');
    await page.reload();
    await visible(page, 'create-profile');
    assert(await page.getByTestId('profile-name').isHidden(), 'a guest after a reload');
    await context.close();

    // The key link in a fresh browser: signed in, and the key is out of the address bar.
    const fresh = await newPage('prof2');
    await fresh.page.goto(link);
    await visible(fresh.page, 'profile-name');
    assert(await text(fresh.page, 'profile-name') === 'Percival', 'signed in from the key link');
    assert(Number(await text(fresh.page, 'profile-rating')) === after, 'with its rating');
    const where = await fresh.page.evaluate(() => location.href);
    assert(!where.includes('key'), `the key left the address bar: ${where}`);
    assert(await fresh.page.evaluate(() => localStorage.getItem('wizard.profile_key')) === key, 'the key is kept there');

    // Delete, after a confirmation: the profile page is gone.
    fresh.page.once('dialog', (d) => d.accept());
    await fresh.page.getByTestId('delete-profile').click();
    await visible(fresh.page, 'create-profile');
    assert(await fresh.page.evaluate(() => localStorage.getItem('wizard.profile_key')) === null, 'the key is dropped');
    // Asked from here, not from the page (a 404 in the page is a console error). The
    // pages are published after each pass of the server: asked until they follow.
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await fetch(`${URL}/profiles/${id}`)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert(status === 404, `a deleted profile's page: ${status}`);
    await fresh.context.close();
  });
}
