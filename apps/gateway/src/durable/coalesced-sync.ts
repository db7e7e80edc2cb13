/**
 * `sync` shared by the callers that ask at once (a group commit): a call while none runs starts
 * one; the calls while one runs share the next, which starts when that one ends (the running
 * one may have begun before their writes, so it cannot stand for them). Each caller's promise
 * settles with a sync that started after it asked, and rejects when that sync does.
 *
 * Why: a webhook syncs the journal before each 200, and Telegram posts other chats' updates at
 * once: one sync per request put up to `max_connections` `fdatasync`s of the journal's log on
 * libuv's four threads at once. `pnpm bench:e2e --webhook` made one sync per update before
 * (465 for 465) and 108 for 348 updates with this (bench/README.md, "Webhook beside polling,
 * again").
 */
export function coalescedSync(sync: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const run: Promise<void> = sync().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  const ignore = (): void => {};
  return () => {
    if (running === undefined) return start();
    next ??= running.then(ignore, ignore).then(() => {
      next = undefined;
      return start();
    });
    return next;
  };
}
