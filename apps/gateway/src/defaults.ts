// The subpath, not the index: the SQLite worker threads bundle this module, and the index would
// load dockerode into each of them (sqlite/worker-imports.test.ts).
import { Defaults as SandboxDefaults } from "@mediagate/sandbox/defaults";

/** Time limit of one command in the sandbox: the sandbox's own, for every agent. */
const commandTimeoutMs = SandboxDefaults.execTimeoutMs;
/** Cap on the bytes one `read_file` tool call reads out of the container. 256 KiB. */
const readMaxBytes = 256 * 1024;
/** Cap of the outbox's doubling retry wait. */
const retryMaxMs = 30 * 60 * 1000;
/**
 * The longest `retry_after` a reply is scheduled for (one up to `retry.maxRetryAfterSeconds` is
 * waited out in place): a longer one is waited this long, and the attempt then learns from the
 * platform what is left of it.
 */
const maxRetryAfterMs = 60 * 60 * 1000;

/**
 * Every default of @mediagate/gateway, each written once (the sandbox's come from
 * `@mediagate/sandbox`'s `Defaults`). Settings an operator can write in the config are in the
 * config's units (seconds); the modules that use them in milliseconds derive them from here,
 * so a default never drifts between the config, the docs and the code. Each module exports
 * its section under its own name (`ShellAgentDefaults`, `OutboxDefaults`, …), checks it
 * against its own options type there (`Defaults.shellAgent satisfies …`), and merges it with
 * its options once, in its constructor or resolver. This file imports none of their types:
 * it would be the centre of an import cycle with every one of them.
 */
export const Defaults = {
  /** The profile of a config without `profiles:`; it uses the root home. */
  profileName: "default",
  /** Root home below the user's home directory when neither config nor env sets one. */
  homeDirName: ".mediagate",
  agentKind: "shell",
  /**
   * Turns running at once across all sessions (`concurrency`), those delivering their reply
   * not counted. Chosen from `pnpm bench:e2e` (bench/README.md): with 100 users on 2 cores,
   * 16 answered 1,071 msg/s where 4 answered 810 and 32 1,069; 64 added 8 % for four times
   * the commands running in the sandboxes at once (docs/configuration.md).
   */
  concurrency: 16,
  /** How long a stop lets running turns and deliveries finish (`drainTimeoutSeconds`). */
  drainTimeoutSeconds: 15,
  /** Seconds a turn may run before the chat gets a one-time "still working…" message. */
  stillWorkingAfterSeconds: 60,
  /**
   * A message that arrives while its session's turn runs (docs/sessions.md, "Busy sessions"):
   * `queue` runs it after, `interrupt` stops the running turn first, `collect` merges every
   * message sent meanwhile into one next turn. At most `maxQueuedMessages` wait per session.
   */
  busy: {
    mode: "queue",
    maxQueuedMessages: 10,
  },
  /** `/stop` and `/reset` (docs/sessions.md, "Busy sessions"). */
  stopping: {
    /**
     * The longest wait for a reply on its way (its delivery attempt opens the files it names
     * in the container) before the container and its files are removed anyway: an attempt
     * held up by a platform's rate limit must not hold the command, or a replica's round
     * acting on another replica's `/stop`, for minutes.
     */
    deliveryWaitMs: 10_000,
  },
  /**
   * The live status message of a long turn (docs/sessions.md, "Live progress"): posted after
   * `afterSeconds`, edited at most every `everySeconds` (every `telegramGroupEverySeconds` in
   * a Telegram group, where a bot may send 20 messages a minute), deleted once the reply went
   * out.
   */
  progress: {
    enabled: true,
    afterSeconds: 3,
    everySeconds: 1,
    /** The floor of `everySeconds` whatever the configuration. */
    minEverySeconds: 1,
    telegramGroupEverySeconds: 3,
    /** Edits that fail in a row (a rate limit aside) before the status is left as it is. */
    maxFailedEdits: 3,
    /**
     * A streamed preview waits this much longer than the platform's edit interval between
     * calls: paced at the interval exactly, network jitter lands two calls within one second
     * of each other at the platform (Telegram answered 429s in the e2e runs).
     */
    previewMarginMs: 150,
    /**
     * A model's streamed text shows once its turn ran this long: a reply that comes whole
     * sooner is sent without a preview before it (a draft, or on Discord a post and its
     * delete, that would show for a moment). The typing indicator and the status reactions
     * wait as long.
     */
    modelPreviewHoldMs: 1_000,
    /** One status call (post, edit, delete) is given up after this long. */
    requestTimeoutMs: 10_000,
    /**
     * A status a crash left (docs/durability.md) is the one status call made again after a
     * rate limit, this many times in all, when the platform asks to wait no longer than
     * `leftoverMaxWaitMs`: the killed process's edits may have used the chat's budget, and the
     * restart's notice is the only word the user gets that the turn was cut off.
     */
    leftoverAttempts: 3,
    leftoverMaxWaitMs: 10_000,
  },
  /**
   * Status reactions on the user's message (docs/sessions.md, "Status reactions"): on in
   * private chats, off in groups (a reaction on every message of a busy group is noise).
   */
  reactions: {
    enabled: true,
    groups: false,
    /**
     * 👀 and 👨‍💻 show once the message was accepted this long ago: most messages are answered
     * sooner, and those two reactions and 👍 were three Bot API requests per message (five on
     * Discord) that the reply made pointless. The typing indicator waits as long.
     */
    afterMs: 1_000,
    /** One reaction call is given up after this long. */
    requestTimeoutMs: 10_000,
    /**
     * The longest `retry_after` a rate-limited reaction waits for (then the latest status is
     * set once); a longer one gives the message's reactions up.
     */
    maxRetryAfterMs: 30_000,
  },
  /**
   * How a reply shows while the agent writes it (docs/streaming.md): drafts in Telegram
   * private chats, one edited message elsewhere.
   */
  stream: "auto",
  /**
   * Who may use a profile (docs/security.md): `allowlist` (only `allowedUsers` and `admins`)
   * or `pairing` (also users an admin approved with a one-time code they got in a DM).
   */
  access: "allowlist",
  /** docs/security.md, "Pairing": the codes' lifetime and the caps on requests and guesses. */
  pairing: {
    /** A code expires this long after it was sent. */
    codeTtlSeconds: 60 * 60,
    /** Codes that may wait for an admin at once per profile; more requests are told to wait. */
    maxPendingCodes: 10,
    /** Wrong codes in a row `/approve` takes before it locks. */
    maxFailedApprovals: 5,
    /** How long `/approve` stays locked after that. */
    lockSeconds: 15 * 60,
  },
  /**
   * Code requests refused because `pairing.maxPendingCodes` are waiting are logged as one
   * summary line per `summaryMs` in which any came, never one each (docs/security.md,
   * "Pairing"): anyone can DM the bot, and a flood of strangers must not flood the log. The
   * same bounds as the webhook's refusals (`telegram.webhookRefusal…`).
   */
  pairingRefusals: {
    summaryMs: 60_000,
    /** Users a summary counts one by one (the rest are counted together). */
    maxUsers: 10_000,
    /** Users a summary names, the most refused first. */
    topUsers: 5,
  },
  /** docs/approvals.md: asking before the agent acts. */
  approvals: {
    /** Which actions ask: `never` (none), `always`, or rules (config `agent.approvals.ask`). */
    ask: "never",
    /** Who may decide: the person whose message started the turn (or an admin), or admins only. */
    approvers: "sender",
    /** An approval nobody decides is answered "expired" after this long (the agent is told). */
    expiresSeconds: 10 * 60,
    /** Approvals pending at once per profile; more are refused at once ("too many waiting"). */
    maxPending: 20,
    /** Decided approvals are kept this long (the web console lists them), then dropped. */
    keepSeconds: 7 * 24 * 60 * 60,
    /** The action shown with the buttons is cut to this many characters. */
    actionMaxChars: 600,
    /** Newest approvals the web console lists per profile. */
    listed: 20,
    /**
     * A typed answer decides no question asked more than this after it was sent (its platform's
     * send time against the gateway's clock; docs/approvals.md): it covers Telegram's
     * whole-second dates and a clock or two a second apart.
     */
    typedAnswerSlackMs: 2_000,
  },
  /** Re-run a turn a crash cut off (off: its chat gets a notice; commands are not idempotent). */
  rerunInterrupted: false,
  sessions: {
    groupSessionsPerUser: true,
    threadSessionsPerUser: false,
    /**
     * Sessions a process remembers per container slot for `/reset`, `/status` and `/stop all`
     * (docs/sessions.md): the most recently queued, and every one with a turn running or a
     * message queued. A persistent profile's slot sees every user of the profile; unbounded,
     * it grew by a key for each, for the process's life.
     */
    keptPerSlot: 10_000,
  },
  /** The state stores of the profiles (docs/store.md). */
  state: {
    /**
     * Stored text of the conversations the stores keep read in memory, all profiles together,
     * in each gateway process, so a turn reads only the messages added since (docs/store.md,
     * "Conversations read once"), plus 96 per message. 16 M held 73 conversations of 1,000
     * messages of about 100 characters in 15 MB of heap (measured).
     */
    conversationCacheChars: 16 * 1024 * 1024,
  },
  /** docs/durability.md: sends whose outcome is unknown, the outbox's caps and retry waits. */
  delivery: {
    ambiguousSends: "at-most-once",
    /** Delivery attempts of one reply before it is given up. */
    maxAttempts: 8,
    /** A reply older than this is given up instead of sent late. */
    maxAgeSeconds: 6 * 60 * 60,
    /** Wait before retrying an attempt that failed outright (doubles per attempt, capped). */
    retryBaseMs: 30_000,
    retryMaxMs,
    maxRetryAfterMs,
    /**
     * The longest wait between a pending reply's attempts: the larger of `retryMaxMs` and
     * `maxRetryAfterMs`. A reply taken over after a restart whose recorded retry time lies
     * further ahead was scheduled by a wall clock that has stepped back since: it is due at
     * once (docs/durability.md, "Clock steps").
     */
    longestWaitMs: Math.max(retryMaxMs, maxRetryAfterMs),
    /**
     * Messages a reply's text may take; a longer one is sent as that many messages of its
     * head and the whole reply as reply.txt (docs/media.md, "Long replies").
     */
    maxTextChunks: 4,
  },
  /** How reply text is rendered (docs/formatting.md). */
  render: {
    /**
     * A profile's `format` by its agent: models answer in Markdown, rendered natively; a
     * command's output is not Markdown, shown as printed.
     */
    format: { openai: "markdown", shell: "plain" },
    /**
     * A table whose aligned columns fit in this many characters is shown as a monospace grid
     * (about what a phone shows without wrapping); a wider one as one record per row.
     */
    tableGridMaxWidth: 40,
  },
  /** Retries of one platform call (docs/media.md). */
  retry: {
    maxAttempts: 4,
    maxRetryAfterSeconds: 60,
    minDelayMs: 500,
    maxDelayMs: 8000,
  },
  activity: {
    /**
     * A turn shows typing once it ran this long: most shell commands answer in a few ms, and
     * a typing indicator for them was one more Bot API request per message (docs/sessions.md).
     */
    typingAfterMs: 1_000,
    /** Typing indicators expire after ~5 s on Telegram; renew a little earlier. */
    intervalMs: 4_000,
    stillWorkingText: "⏳ Still working…",
  },
  shellAgent: {
    maxReplyChars: 3_500,
    timeoutMs: commandTimeoutMs,
    /**
     * Where a cut output also goes whole, as a file the reply names (docs/media.md, "Long
     * command output").
     */
    outputFileDir: "/workspace/.outputs",
  },
  openaiAgent: {
    maxToolRounds: 8,
    timeoutMs: 180_000,
    maxRetries: 2,
    toolTimeoutMs: commandTimeoutMs,
    maxToolOutputChars: 16_000,
    readMaxBytes,
    /** Largest image a user sent that is passed to the model as an image input (vision). */
    imageMaxBytes: 5 * 1024 * 1024,
    /** All image inputs of one message together: every request of its turn carries them. */
    imagesMaxBytes: 20 * 1024 * 1024,
    /** Largest audio file sent for transcription: OpenAI's `/audio/transcriptions` limit (25 MB). */
    transcriptionMaxBytes: 25 * 1000 * 1000,
  },
  /** `agent.models`, the fallback chain and usage (docs/models-and-usage.md). */
  models: {
    /**
     * The context size of an entry whose `contextTokens` is unset and whose model the known
     * list (`agents/model-context.ts`) does not name: small on purpose, compacting early costs
     * a summary call, overflowing costs a failed turn.
     */
    contextTokens: 8_192,
    /**
     * A 429 whose `retry-after` asks for at most this long is retried on the same model; a
     * longer one (or none, past `openaiAgent.maxRetries`) moves to the next model of the chain.
     */
    rateLimitWaitMs: 10_000,
    /** The first retry of a failing last model of the chain waits this long, then doubles. */
    retryBaseMs: 500,
    retryMaxMs: 8_000,
    /** Days `/usage` and `mediagate usage` look back for "7 days", today included. */
    weekDays: 7,
    /**
     * The most tokens one figure of a call's `usage` counts (a billion: a hundred times the
     * largest context there is). An endpoint claiming more is counted this many: summed
     * unbounded, a few such claims would overflow the usage table's 64-bit totals and fail
     * every report and budget check from then on.
     */
    maxCallTokens: 1_000_000_000,
  },
  /** The openai agent's context budget and compaction (docs/sessions.md). */
  compaction: {
    /** The share of the context a request may fill; the rest is room for the answer. */
    budgetShare: 0.75,
    /**
     * A compaction summarizes until the conversation fills this share of the budget, so the
     * next one is many turns away rather than one.
     */
    targetShare: 0.5,
    /** The newest turns are never summarized, nor their tool outputs trimmed. */
    keepRecentTurns: 2,
    /** An older tool output is trimmed to this many chars (its start and end) first. */
    trimmedToolOutputChars: 600,
    /** The longest summary kept, in tokens; at most `summaryMaxShare` of the context. */
    summaryMaxTokens: 2_000,
    summaryMaxShare: 0.1,
    /**
     * A summary request's `max_completion_tokens`: this many times the summary's limit. The
     * server stops a model that writes on (whose text would be cut to the limit anyway) instead
     * of billing its every token, and a reasoning model, whose thinking counts against the
     * same limit, keeps room to write the summary after it.
     */
    summaryAnswerFactor: 2,
    /** Counted for each image input: its tokens depend on the provider and the size. */
    imageTokens: 1_500,
    /**
     * The server's prompt tokens per estimated token are believed from 1/`countRatioMax` to
     * `countRatioMax`: tokenizers differ by a factor of two or three at most, and a broken usage
     * report (a billion tokens for a short request) would otherwise have the next turn
     * summarize the whole conversation.
     */
    countRatioMax: 4,
    /**
     * The smallest context a server's "maximum context length is N" is believed down to (with
     * the largest prompt the model answered in this process): a broken proxy's "16 tokens"
     * would otherwise have every message refused as too long until a restart. 2,048 is the
     * smallest context of the models still served (GPT-2's 1,024 runs no tool calls).
     */
    minReportedContextTokens: 2_048,
    /** The focus text of `/compact` passed to the summary request, at most. */
    focusMaxChars: 500,
  },
  toolRunner: {
    timeoutMs: commandTimeoutMs,
    readMaxBytes,
    /** base64 characters per write command (a multiple of 4). */
    writeChunkChars: 64 * 1024,
  },
  telegram: {
    apiRoot: "https://api.telegram.org",
    dropPendingUpdates: false,
    requestTimeoutBaseMs: 15_000,
    minUploadBytesPerSecond: 256 * 1024,
    pollTimeoutSeconds: 30,
    pollTimeoutMarginMs: 10_000,
    pollBackoffMinMs: 1_000,
    pollBackoffMaxMs: 60_000,
    /** Updates per getUpdates (Telegram's maximum). */
    pollLimit: 100,
    /** How long stop() waits for an update being recorded before it confirms what it has. */
    stopWaitMs: 5_000,
    /** Bound of the confirming getUpdates at stop. */
    confirmTimeoutMs: 3_000,
    /** Largest file a user may send: the public Bot API's getFile limit (20 MB). */
    downloadMaxBytes: 20 * 1000 * 1000,
    /** A poll that ends inside an album waits this long, then asks for the rest of it. */
    albumWaitMs: 1_000,
    /**
     * Items of one album gathered into one message at most (docs/inbound-media.md): Telegram's
     * own bound on an album (`sendMediaGroup` takes 2-10). An item past it starts a message of
     * its own, so a client that reuses one `media_group_id` cannot grow a turn without end.
     */
    albumMaxItems: 10,
    /**
     * Webhook mode: an album's turn starts once no item of it came for this long (each item is
     * recorded and answered on its own; docs/telegram-webhooks.md). Telegram posts the items of
     * one chat back to back, each as soon as the previous one was answered.
     */
    webhookAlbumQuietMs: 1_000,
    /** Files come through a local Bot API server's paths instead of downloads (`localFiles`). */
    localFiles: false,
    /** A typing indicator that takes longer than this is not worth waiting for. */
    activityTimeoutMs: 10_000,
    /**
     * grammY's own bound on a request (its default is 500 s). Every call carries its own
     * size-based bound, which must win, so grammY's is set out of the way.
     */
    grammyTimeoutSeconds: 24 * 60 * 60,
    /** docs/sessions.md, "Groups": in groups, answer only messages addressed to the bot. */
    groups: { requireMention: true },
    /** docs/telegram-webhooks.md: where the webhook listens, behind a TLS reverse proxy. */
    webhookListen: "127.0.0.1:8443",
    /** Telegram's own default of `max_connections`. */
    webhookMaxConnections: 40,
    /**
     * Largest webhook body read: an Update is a few KiB (a 4096-character text, its entities
     * and the message it replies to); a bigger body is answered 413 unread.
     */
    webhookBodyMaxBytes: 1024 * 1024,
    /** Bound of reading one webhook request (Node's `requestTimeout`). */
    webhookCallTimeoutMs: 15_000,
    /**
     * Webhook requests refused for a missing or wrong secret (401) are logged as one summary
     * line per this period, never one line each (docs/telegram-webhooks.md).
     */
    webhookRefusalSummaryMs: 60_000,
    /** Addresses a refusal summary counts one by one (the rest are counted together). */
    webhookRefusalMaxAddresses: 10_000,
    /** Addresses a refusal summary names, the most refused first. */
    webhookRefusalTopAddresses: 5,
    /** How often getWebhookInfo is asked for Telegram's last delivery error (health, `/status`). */
    webhookInfoEveryMs: 60_000,
  },
  discord: {
    apiRoot: "https://discord.com/api",
    requestTimeoutMs: 15_000,
    catchUpMaxMessages: 200,
    /** Backoff while the message handler rejects (the journal cannot be written). */
    inboundRetry: { minDelayMs: 1000, maxDelayMs: 60_000 },
    /** Largest attachment saved: Discord's upload limit for an unboosted server (25 MiB). */
    downloadMaxBytes: 25 * 1024 * 1024,
    /**
     * The threads the bot answered in that a process remembers (docs/sessions.md), the most
     * recent: its answers go on in a thread answered since, and the memory stays bounded.
     */
    answeredThreadsKept: 10_000,
  },
  /**
   * Inbound files' reads (docs/inbound-media.md): each download or file read reuses these
   * buffers for all of its bytes instead of allocating per read.
   */
  download: {
    /** One socket read (Node's `onread` buffer). */
    readBytes: 64 * 1024,
    /** Bytes read ahead of the inbox, and the largest chunk handed to it. */
    ringBytes: 256 * 1024,
    /** Largest answer head (status line and headers), any line of a chunked body, its trailers. */
    maxHeadBytes: 64 * 1024,
    maxRedirects: 5,
    /** One read of a file on this host (Telegram `localFiles`, the console's `/attach`). */
    fileReadBytes: 256 * 1024,
  },
  console: {
    prompt: "mediagate> ",
    chatId: "local",
    /** Files are copied locally; the cap only guards the disk. */
    maxBytes: 1024 * 1024 * 1024,
    /** Largest file `/attach` sends in. */
    attachMaxBytes: 100 * 1024 * 1024,
  },
  /** docs/sessions.md, "Command menus": registered with Telegram and Discord at start-up. */
  commandMenus: { register: true },
  /** docs/schedules.md: scheduled tasks (`schedules:` of a profile). */
  schedules: {
    /** The zone cron patterns and `/at` times are read in, unless the user's own is set. */
    timezone: "UTC",
    /** Active chat tasks one user may have in a profile. */
    maxPerUser: 10,
    /** Active chat tasks of all users of a profile together (config tasks do not count). */
    maxPerProfile: 100,
    /** The shortest gap between two due times a chat task may have (config tasks too). */
    minIntervalSeconds: 5 * 60,
    /**
     * The longest `/every` interval: rarer things are a date (`/at`) or a yearly `/cron`. Far
     * longer ones would put the next run past the dates JavaScript and the store can hold.
     */
    maxIntervalDays: 366,
    /** A run still going this long after it was handed on is stopped, as by /stop. */
    runTimeoutSeconds: 30 * 60,
    /** A due time missed while the gateway was down: run once after the start. */
    catchUp: "once",
    /** Runs skipped in a row because the one before was still going, before the chat is told. */
    overlapNoticeAfter: 3,
    /**
     * Runs in a row whose answer could not reach the task's chat (the platform said it is gone
     * for the bot: blocked, removed, deleted) before the task is paused: each run is an agent
     * turn paid for with nobody to read it. Three tells a lasting state from a passing one.
     */
    pauseAfterUnreachable: 3,
    /**
     * The longest the scheduler waits before it looks at the due times again, whatever the
     * next one is: a wall clock stepped by NTP or an operator, or a task another process of the
     * profile added, is noticed within this.
     */
    maxWaitMs: 60_000,
    /** Runs kept (and shown) per task; older ones are dropped. */
    keptRuns: 50,
  },
  gateway: {
    /** After cutting running turns off, how long stop() waits for them to settle. */
    abortGraceMs: 5_000,
    /** How long stop() waits for each sandbox's outstanding cleanups. */
    shutdownTimeoutMs: SandboxDefaults.shutdownTimeoutMs,
    /** Recorded messages and delivered replies are kept this long, then pruned. */
    journalRetentionMs: 7 * 24 * 60 * 60 * 1000,
    /** How often a running gateway prunes the journal (it also does at start). */
    journalPruneIntervalMs: 60 * 60 * 1000,
    /**
     * How long without a message before the main thread's heap is collected once, giving back
     * what the last burst left (docs/operations.md, "Memory"; `gateway/idle-collection.ts`).
     */
    idleCollectionQuietMs: 30_000,
    /** How long an engine reachability answer is reused by the health endpoint. */
    engineCheckTtlMs: 5_000,
    /** How long a PostgreSQL reachability answer is reused by the health endpoint and `/status`. */
    storeCheckTtlMs: 5_000,
    /** A start that failed half way: how long each sandbox made so far may take to shut down. */
    failedStartShutdownMs: 1_000,
    /**
     * Turns kept while PostgreSQL did not answer: the first probe of the server after this,
     * doubling per failed probe up to `keptRetryMaxMs`, so a turn runs again at most that long
     * after the server is back (docs/store.md, "While PostgreSQL is down").
     */
    keptRetryMinMs: 1_000,
    keptRetryMaxMs: 15_000,
  },
  /** The SQLite databases: the journal and each profile's state (docs/durability.md). */
  database: {
    /** How long a writer waits for another process's lock. */
    busyTimeoutMs: 5_000,
    /** How long closing waits for operations in flight (a stalled disk) before giving up on them. */
    closeTimeoutMs: 10_000,
    /**
     * How long opening a database waits for its integrity check (`PRAGMA quick_check`) before
     * it goes on without the verdict; the check keeps running and reports later. Measured on
     * a 2-core machine, file in the page cache: a journal of 100,000 answered messages
     * (130 MB) took 0.8-1.2 s, so this covers journals several times that size, while a very
     * large state database (years of history) does not hold the start up for more than this.
     */
    integrityWaitMs: 5_000,
    /** How many problems a damaged database's line names at most (the first ones found). */
    integrityMaxProblems: 3,
  },
  /** The PostgreSQL store (`store: { kind: postgres }`, docs/store.md). */
  /**
   * Replicas sharing one PostgreSQL store (docs/cluster.md). Every bound here keeps a dead
   * replica's bot connection moving to another within the 15 s.
   */
  cluster: {
    /** How often a replica writes its heartbeat into `mediagate_replicas`. */
    heartbeatIntervalMs: 2_000,
    /** A replica whose last heartbeat is older than this is listed as dead. */
    deadAfterMs: 10_000,
    /**
     * How many times a start asks whether the process registered under its id before it is
     * gone (its owner lock free), `registerRetryMs` apart, before refusing with
     * `MG_REPLICA_ID_TAKEN`: another replica's take-over holds that lock for a moment while
     * it judges the same.
     */
    registerTries: 5,
    registerRetryMs: 500,
    /**
     * How long a leader lease (one replica polls Telegram / holds the Discord connection of a
     * bot) lasts on the server once taken or renewed; another replica takes it only after.
     */
    leaderLeaseMs: 10_000,
    /** How often the leader renews its lease. */
    leaderRenewIntervalMs: 2_000,
    /** How often a replica that is not the leader tries to take the lease. */
    leaderAttemptIntervalMs: 1_000,
    /**
     * The leader stops its connection this long before the lease would run out counted from
     * the last renewal it sent: time for the stop itself (Telegram's closing getUpdates,
     * `Defaults.telegram.confirmTimeoutMs`) to end before anyone else may start.
     */
    leaderStopMarginMs: 4_000,
  },
  postgres: {
    /**
     * Connections of the pool: every query waits for one, so a slow server never holds more
     * than this many of the gateway's calls at once, and never the event loop.
     */
    maxConnections: 10,
    /** How long a query may run on the server (`statement_timeout`) before it is cancelled. */
    statementTimeoutMs: 10_000,
    /**
     * How long a call waits for its answer in all (a connection, the query, the network) before
     * it fails: the call fails, the gateway does not wait on a server that stopped answering.
     */
    queryTimeoutMs: 15_000,
    /** How long making a new connection may take. */
    connectTimeoutMs: 5_000,
    /** An idle connection of the pool is closed after this long. */
    idleTimeoutMs: 30_000,
    /**
     * The journal's owner lock (docs/durability.md, "PostgreSQL"): after its connection was
     * lost, the first wait before taking it again, doubling up to `ownerRelockMaxMs`. Short:
     * until it is taken again, other processes see this one as gone.
     */
    ownerRelockBaseMs: 100,
    ownerRelockMaxMs: 2_000,
    /**
     * How long after the server started a takeover waits before it judges owners by their
     * locks: a restart drops every live process's lock, and each takes it again within
     * `ownerRelockMaxMs` of the server answering, plus the time to connect.
     */
    ownerGraceMs: 10_000,
  },
  /**
   * Session leases of replicas sharing one PostgreSQL store (docs/cluster.md, "Sessions across
   * replicas"). A dead holder's sessions are taken within `leaseMs` plus one `pollMs`, inside
   * the 15 s take-over bound.
   */
  sessionLeases: {
    /** How long a claimed or renewed lease lasts without being renewed again. */
    leaseMs: 10_000,
    /**
     * The holder renews every lease it holds this often: three renewals fit in one `leaseMs`,
     * so one slow or failed round trip does not lose a session.
     */
    renewMs: 3_000,
    /**
     * A holder stops acting for a session this long before its lease's expiry as it last wrote
     * it, by its own monotonic clock. Leases are written and judged on the database server's
     * clock (durable/lease-clock.ts), which each replica knows within half a round trip: the
     * margin covers two replicas' errors of up to `clockMaxRoundTripMs` / 2 each, with room.
     */
    marginMs: 2_000,
    /** How often a replica reads the database server's clock again (its drift and steps). */
    clockResyncMs: 60_000,
    /**
     * A reading of the database's clock whose round trip took longer is not believed (an older
     * one is kept): a replica's error is at most half its reading's round trip.
     */
    clockMaxRoundTripMs: 500,
    /**
     * How often a replica looks for messages handed to it, for dead replicas' entries and
     * replies, and renews its leases when `renewMs` is due.
     */
    pollMs: 1_000,
    /** A session with nothing queued or running for this long has its lease released. */
    idleReleaseMs: 60_000,
    /**
     * A turn about to start whose session has an older message still open elsewhere (a live
     * replica's not handed over yet, or one of this replica's on its way to the queue) looks
     * again this often (docs/cluster.md, "Each session's messages in order").
     */
    orderCheckMs: 200,
    /**
     * ... and runs anyway once it has waited this long, logging which older message it ran
     * before: a dead replica's messages are taken over within `leaseMs` plus a check, so this
     * bounds a replica cut off from the database (it gives its messages back once it can).
     */
    orderWaitMs: 15_000,
    /**
     * A `/stop` request for another replica that it has not taken for this long is deleted by
     * any replica's round: a live one takes its requests every `pollMs`, so its holder is gone.
     */
    requestExpiryMs: 60_000,
  },
  /**
   * Pins of persistent and `shared:` slots (docs/cluster.md, "Sandboxes across replicas"). A
   * pin lives, is renewed and is taken over with the session leases' `leaseMs`, `renewMs` and
   * `marginMs`, so a dead holder's slot moves within the same bound.
   */
  slotPins: {
    /**
     * With `cluster.slotsDir`, a slot with nothing queued or running on its holder for this
     * long has its pin released and its container there removed (files kept), so profiles
     * spread over the replicas. Longer than a session's: moving a slot restarts its container
     * and ends whatever runs in it in the background.
     */
    idleReleaseMs: 600_000,
  },
  /** Logging (docs/operations.md). */
  log: {
    level: "info",
    /**
     * When the local console is the only channel: the chat shares the terminal with the logs,
     * so only problems are shown unless a level is set.
     */
    consoleLevel: "warn",
    /** pino-pretty on a terminal: local clock time, no pid/hostname, one line per entry. */
    pretty: { translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", singleLine: true },
  },
  /** The web console (docs/web-console.md); the server's own defaults are in @mediagate/web. */
  web: {
    /** `web.listen` when `web:` is configured without it: loopback only. */
    listen: "127.0.0.1:8787",
    /** Log lines kept in memory for the console's Logs page (and its recent errors). */
    logLines: 2_000,
    /** Sessions the console's Sessions page remembers (the least recently active go first). */
    maxSessions: 1_000,
  },
  /** `mediagate doctor`'s network probes. */
  probes: {
    /** Each HTTP probe (getMe, /users/@me, /models, the health endpoint) as a whole. */
    timeoutMs: 5_000,
  },
  /** SIGINT/SIGTERM of `mediagate start` (docs/operations.md). */
  stopSignals: {
    /** Repeats this soon after the first signal are the same request, not a second one. */
    repeatWindowMs: 1_000,
  },
} as const;
