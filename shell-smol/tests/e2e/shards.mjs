// End-to-end scenario for the web client on a sharded deployment (run by
// e2e.mjs when run.sh started HAProxy with deploy/haproxy.cfg in front of two shards,
// A and B): a player welcomed on one shard opens an invite link for a lobby on the other
// and, after the one Join click any invite needs, lands in that lobby: the client
// follows `wrong_shard` to /ws/<owner> and repeats the join without a word to the
// player. The same for a watch link (`spectate`). HAProxy balances /ws by connections,
// so with the host's connection on one shard the next page is welcomed on the other.
// The pages' files come from shell-smol/web through the browser context (HAProxy
// forwards the websocket routes only).

export async function shardScenarios(t) {
  const { scenario, newPage, assert, visible, text, URL } = t;

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
}
