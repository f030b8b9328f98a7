// End-to-end scenario of the replay viewer (run by e2e.mjs; PROTOCOL.md 7.4): a short
// game (one human, two AI, on a server with no pauses and a SQLite store) played to
// the ranking, the replay opened from the end screen, stepped by move and by trick
// with every hand, the trick, its winner and the scores checked, then opened again by
// its link in a new page; a game id that is not a finished game says so.

import { join } from 'node:path';

export async function replayScenarios(t) {
  const { scenario, newPage, assert, visible, text, log, OUT, URL, startWithTwoAi, playToEnd } = t;

  await scenario('replay: a finished game stepped by move and by trick from the end screen and by its link', async () => {
    // A game just finished reaches the store's history within STORE_SYNC_INTERVAL, and
    // the viewer asks again until it is there: a 404 before that is expected.
    const { context, page } = await newPage('replay', { width: 1280, height: 900 }, undefined, /status of 404/);
    await startWithTwoAi(page, URL, 'Rhea');
    const actions = await playToEnd(page);
    log(`  ${actions} actions clicked`);
    await visible(page, 'ranking');
    // The scores the end screen showed, by name.
    const ranked = await page.getByTestId('ranking').locator('li').allTextContents();
    assert(ranked.length === 3, `3 ranked: ${ranked}`);

    await page.getByTestId('open-replay').click();
    await visible(page, 'replay-status');
    await page.getByTestId('replay-status').filter({ hasText: 'move 0 of' }).waitFor();
    assert((await text(page, 'replay-status')).startsWith('Round 1 of 20'), await text(page, 'replay-status'));
    // Round 1 as dealt: one card in every hand, all three shown, nothing on the table.
    const handOf = async (seat) => (await page.getByTestId(`replay-hand-${seat}`).getAttribute('data-cards')).split(' ').filter(Boolean);
    const dealt = [];
    for (let seat = 0; seat < 3; seat++) {
      const hand = await handOf(seat);
      assert(hand.length === 1, `seat ${seat} holds 1 card: ${hand}`);
      assert(await page.getByTestId(`replay-hand-${seat}`).locator('.card').count() === 1, 'the card is drawn');
      dealt.push(hand[0]);
    }
    assert(new Set(dealt).size === 3, `three different cards: ${dealt}`);
    assert((await page.getByTestId('replay-trick').getAttribute('data-cards')) === '', 'no trick yet');

    // Three moves: the bids.
    for (let i = 0; i < 3; i++) await page.getByTestId('replay-next').click();
    assert((await text(page, 'replay-status')).includes('move 3 of'), await text(page, 'replay-status'));
    for (let seat = 0; seat < 3; seat++) {
      assert(/bid \d/.test(await text(page, `replay-bid-${seat}`)), `seat ${seat} has bid`);
    }

    // By trick: the first trick is on the table with its winner, the hands are empty.
    await page.getByTestId('replay-next-trick').click();
    const trick = (await page.getByTestId('replay-trick').getAttribute('data-cards')).split(' ');
    assert(trick.length === 3 && trick.every((c) => dealt.includes(c)), `the dealt cards were played: ${trick}`);
    const winner = Number(await page.getByTestId('replay-trick').getAttribute('data-winner'));
    const winnerName = (await text(page, `replay-name-${winner}`)).replace(/ \(AI.*\)$/, '');
    assert((await text(page, 'replay-winner')) === `${winnerName} wins trick 1`, await text(page, 'replay-winner'));
    assert((await text(page, `replay-taken-${winner}`)).includes('tricks 1'), 'the winner took it');
    for (let seat = 0; seat < 3; seat++) assert((await handOf(seat)).length === 0, 'every card played');
    assert((await text(page, 'replay-last')).includes('Round over'), await text(page, 'replay-last'));
    await page.screenshot({ path: join(OUT, 'replay-trick.png') });

    // Back one move: two cards on the table, no winner yet, one card back in a hand.
    await page.getByTestId('replay-prev').click();
    assert((await page.getByTestId('replay-trick').getAttribute('data-cards')).split(' ').length === 2, 'two cards');
    assert((await text(page, 'replay-winner')) === '', 'no winner yet');
    // Back by trick: to the deal.
    await page.getByTestId('replay-prev-trick').click();
    assert((await text(page, 'replay-status')).includes('move 0 of'), await text(page, 'replay-status'));

    // A later round, for the picture: round 6, after its second trick.
    while (!(await text(page, 'replay-status')).startsWith('Round 6 ')) await page.getByTestId('replay-next-trick').click();
    await page.getByTestId('replay-next-trick').click();
    await page.getByTestId('replay-next-trick').click();
    assert((await handOf(0)).length === 4, 'round 6: four cards left after two tricks');
    await page.screenshot({ path: join(OUT, 'replay.png') });

    // The end: the final scores are the ranking's.
    await page.getByTestId('replay-end').click();
    await visible(page, 'replay-final');
    const final = await text(page, 'replay-final');
    for (const row of ranked) {
      const points = /(-?\d+) points/.exec(row)?.[1];
      assert(points !== undefined && final.includes(` ${points}`), `${row} in ${final}`);
    }
    assert((await page.getByTestId('replay-next').isDisabled()), 'nothing after the end');

    // By its link, in a new page.
    const link = await page.getByTestId('replay-link').inputValue();
    assert(/\/\?replay=[0-9a-f]{16,}$/.test(link), link);
    // The unknown id below is asked for until the viewer gives up: its 404s are expected.
    const other = await newPage('replay-link', undefined, undefined, /status of 404/);
    await other.page.goto(link);
    await visible(other.page, 'replay-status');
    assert((await text(other.page, 'replay-status')).startsWith('Round 1 of 20'), 'the link opens the replay');
    // An id that is no finished game.
    await other.page.goto(`${URL}/#replay=00000000000000000000`);
    await other.page.getByTestId('replay-message').filter({ hasText: 'No finished game' }).waitFor({ timeout: 15000 });
    await other.context.close();
    await context.close();
  });
}
