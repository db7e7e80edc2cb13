export { WebDefaults } from "./defaults.js";
export type { LiveHubOptions } from "./live.js";
export { LiveHub } from "./live.js";
export type { WebConsole, WebConsoleOptions, WebLogger } from "./server.js";
export { Pages, startWebConsole } from "./server.js";
export { LoginSessions, sameSecret } from "./sessions.js";
export type * from "./source.js";
export { ensureWebToken, WebTokenError, WebTokenFileName, webTokenPath } from "./token.js";
export type * from "./types.js";
