export {
  FaultProxy,
  type FaultStage,
  type ProxiedRequest,
  type ProxyFault,
  type RequestMatch,
} from "./proxy.js";
export { botMethod, floodWait, telegramError } from "./telegram.js";
