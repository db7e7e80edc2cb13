import { combinedSignal } from "@mediagate/io";
import { type InternalRequest, REST } from "discord.js";

/**
 * discord.js's REST, with a signal of its own for each request. @discordjs/rest (2.6.3,
 * `makeNetworkRequest`) adds an abort listener to the signal a request is given, on every
 * attempt, and never takes it off. So a component's stop signal handed to every send kept one
 * listener, and the AbortController it closes over, per request for the process's whole life;
 * and a turn's signal kept one per typing renewal, status edit and reaction of the turn, past
 * Node's limit of 10 in a long turn (the e2e suite's "11 abort listeners added to
 * [AbortSignal]", from `makeNetworkRequest`). Here each request gets a signal that follows the
 * caller's and lets go of it when the request ends: discord.js's listener goes with that signal.
 */
export class CallSignalRest extends REST {
  override async request(options: InternalRequest): Promise<unknown> {
    const { signal } = options;
    if (signal === undefined || signal === null) return super.request(options);
    const call = combinedSignal([signal]);
    try {
      return await super.request({ ...options, signal: call.signal });
    } finally {
      call.release();
    }
  }
}
