import { persistentCrashLoop } from "./durability/persistent-crash-loop.js";

/**
 * Issue 9, "crashes lose messages", as measured there: the real `mediagate start` process is
 * SIGKILLed 30 times while 5 users send 150 messages to one persistent profile
 * (durability/persistent-crash-loop.ts says what is checked).
 */
persistentCrashLoop({
  name: "crash-loop-persistent",
  title: "SIGKILL loop on a persistent profile",
  prefix: "crash-persistent",
  users: [7001, 7002, 7003, 7004, 7005],
  messages: 150,
  kills: 30,
  concurrency: 4,
});
