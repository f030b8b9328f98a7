// End-to-end scenario for the web client on a sharded deployment (run by
// e2e.mjs when run.sh started HAProxy with deploy/haproxy.cfg in front of two shards,
// A and B): a player welcomed on one shard opens an invite link for a lobby on the other
// and, after the one Join click any invite needs, lands in that lobby: the client
// follows `wrong_shard` to /ws/<owner> and repeats the join without a word to the
// player. The same for a watch link (`spectate`). HAProxy balances /ws by connections,
// so with the host's connection on one shard the next page is welcomed on the other.
// The pages' files come from shell-smol/web through the browser context (HAProxy
// forwards the websocket routes only). When the shards share a PostgreSQL store (`pg`),
// quick play is one pool across them: three players on both shards play now at a table
// of 3, and those on the shard that did not create the table follow `matched {code,
// shard}` to /ws/<shard> and end up seated there, in the same game as the others.

export async function shardScenarios(t) {
  const { scenario, newPage, assert, visible, text, log, URL, pg } = t;

  /** Every websocket URL the page opened and every frame it received, parsed. */
  function record(page) {
    const seen = { urls: [], frames: [] };
    page.on('websocket', (ws) => {
      seen.urls.push(new globalThis.URL(ws.url()).pathname);
      ws.on('framereceived', (f) => {
        try {
          seen.frames.push(JSON.parse(f.payload));
        } catch {
          /* not ours */
        }
      });
    });
    return seen;
  }

  /** Opens the home page and waits for its welcome; the shard that welcomed it. */
  async function welcomed(page) {
    await page.goto(URL);
    await visible(page, 'create-lobby');
    await page.waitForFunction(() => sessionStorage.getItem('wizard.token'));
    return page.evaluate(() => sessionStorage.getItem('wizard.shard'));
  }

  await scenario('shards: an invite link and a watch link for a lobby on another shard land in it (wrong_shard followed, no extra click)', async () => {
    const host = await newPage('shard-host');
    await host.page.goto(URL);
    await host.page.getByTestId('name-input').fill('Hal');
    await host.page.getByTestId('create-lobby').click();
    await visible(host.page, 'lobby-code');
    const code = await text(host.page, 'lobby-code');
    const owner = code[0];
    assert(['A', 'B'].includes(owner), `a lobby code names its shard: ${code}`);

    for (const [label, param, button, name] of [
      ['shard-guest', 'join', 'join-lobby', 'Gus'],
      ['shard-watcher', 'watch', 'watch-lobby', 'Wes'],
    ]) {
      const guest = await newPage(label);
      const seen = record(guest.page);
      const first = await welcomed(guest.page);
      assert(first && first !== owner, `${label} welcomed on the other shard first (${first}, lobby on ${owner})`);
      await guest.page.goto(`${URL}/?${param}=${code}`);
      await guest.page.getByTestId('name-input').fill(name);
      await guest.page.getByTestId(button).click();
      // In the lobby, on its owner's route, with no other click.
      const inLobby = () => seen.frames.some((f) => f.type === 'state' && f.lobby?.code === code);
      for (let i = 0; i < 100 && !inLobby(); i += 1) await guest.page.waitForTimeout(100);
      assert(inLobby(), `${label} got the lobby's state (frames: ${JSON.stringify(seen.frames.map((f) => f.code ?? f.type))})`);
      assert(seen.frames.some((f) => f.type === 'error' && f.code === 'wrong_shard' && f.shard === owner), `${label}: the first shard answered wrong_shard naming ${owner}`);
      assert(seen.urls.at(-1) === `/ws/${owner}`, `${label} ends on /ws/${owner}: ${seen.urls}`);
      assert(await guest.page.evaluate(() => sessionStorage.getItem('wizard.shard')) === owner, `${label} keeps ${owner} as its shard`);
      // The host sees the guest seated, or the watcher among the spectators.
      await host.page.locator('body', { hasText: name }).waitFor();
      const toast = guest.page.getByTestId('toast');
      assert(!(await toast.isVisible()) || !/shard|lobby/i.test(await toast.textContent()), `no error shown to ${label}: ${await toast.textContent()}`);
      await guest.context.close();
    }
    await host.context.close();
  });

  if (!pg) {
    log('SKIPPED the quick play across shards scenario: the shards have no PostgreSQL store (run.sh sets SHARD_PG when it can start one)');
    return;
  }
  await scenario('shards: quick play across shards seats a player of the other shard at the table (matched followed)', async () => {
    const players = [];
    for (const name of ['Xa', 'Xb', 'Xc']) {
      const p = await newPage(`shard-quick-${name}`, { width: 1280, height: 800 });
      const seen = record(p.page);
      const shard = await welcomed(p.page);
      await p.page.getByTestId('name-input').fill(name);
      await p.page.getByTestId('quick-seats').selectOption('3');
      players.push({ ...p, seen, name, shard });
    }
    const shards = new Set(players.map((p) => p.shard));
    assert(shards.has('A') && shards.has('B'), `players welcomed on both shards: ${players.map((p) => `${p.name}@${p.shard}`)}`);
    for (const { page } of players) await page.getByTestId('play-now').click();
    for (const { page } of players) await visible(page, 'turn-indicator', 20000);
    // Every page's latest lobby: one table, the same code, its game running.
    const lobbyOf = (seen) => seen.frames.filter((f) => f.type === 'state' && f.lobby).at(-1)?.lobby;
    const code = lobbyOf(players[0].seen)?.code;
    assert(typeof code === 'string' && ['A', 'B'].includes(code[0]), `a table code naming its shard: ${code}`);
    const owner = code[0];
    const matched = players.filter((p) => p.shard !== owner);
    assert(matched.length > 0, `a player was welcomed on the shard without the table (${owner})`);
    for (const p of players) {
      assert(lobbyOf(p.seen)?.code === code, `${p.name} is at ${code}: ${lobbyOf(p.seen)?.code}`);
      const names = (await p.page.locator('.seat-plate').allTextContents()).join(' | ');
      for (const other of players) assert(names.includes(other.name), `${p.name}'s page shows ${other.name} at the table: ${names}`);
      assert((await p.page.getByTestId('lobby-code').textContent()).trim() === code, `${p.name}'s page holds code ${code}`);
    }
    for (const p of matched) {
      const m = p.seen.frames.find((f) => f.type === 'matched');
      assert(m && m.code === code && m.shard === owner, `${p.name} (on ${p.shard}) was told matched ${code} on ${owner}: ${JSON.stringify(m)}`);
      assert(p.seen.urls.at(-1) === `/ws/${owner}`, `${p.name} ends on /ws/${owner}: ${p.seen.urls}`);
      assert(await p.page.evaluate(() => sessionStorage.getItem('wizard.shard')) === owner, `${p.name} keeps ${owner} as its shard`);
      const toast = p.page.getByTestId('toast');
      assert(!(await toast.isVisible()) || !/shard|lobby|error/i.test(await toast.textContent()), `no error shown to ${p.name}: ${await toast.textContent()}`);
    }
    log(`  table ${code} on ${owner}; matched from the other shard: ${matched.map((p) => p.name).join(', ')}`);
    for (const { context } of players) await context.close();
  });
}
