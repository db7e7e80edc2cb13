import { Defaults } from "./defaults.js";
import { runThrowaway, type ThrowawayContext } from "./throwaway-container.js";

/** What {@link deleteInContainer} needs. */
export interface ContainedDeleteContext extends ThrowawayContext {
  /** An image with `rm` (the slot's own sandbox image). */
  readonly image: string;
  /** Bound on the `rm` itself. Default `Defaults.slotDeleteTimeoutMs`. */
  readonly timeoutMs?: number | undefined;
}

/** Mount point of the slot directory inside the delete container. */
const SlotMount = "/slot";

/** Characters of the `rm`'s output quoted in an error. */
const QuotedOutput = 400;

/**
 * Deletes the entries `names` (top-level names of `slotDir`) with `rm -rf` run inside a
 * throwaway container ({@link runThrowaway}, `mediagate-delete-*`) that mounts only `slotDir`.
 * Every path the `rm` follows resolves in that container's own filesystem: a directory
 * swapped for a symlink to a host path while the delete runs (renameat2 RENAME_EXCHANGE)
 * leads to the throwaway's root, which is read-only and holds nothing of the host. The
 * container has no network and only the two capabilities `rm -rf` needs as root over any
 * owner's files (DAC_OVERRIDE, FOWNER). Throws when the `rm` could not run or did not finish
 * cleanly; nothing is then tried on the host.
 */
export async function deleteInContainer(
  context: ContainedDeleteContext,
  slotDir: string,
  names: readonly string[],
): Promise<void> {
  const ended = await runThrowaway(context, {
    kind: "slotDelete",
    image: context.image,
    entrypoint: ["rm", "-rf", "--"],
    cmd: names.map((name) => `${SlotMount}/${name}`),
    user: "0:0",
    capAdd: ["DAC_OVERRIDE", "FOWNER"],
    memoryBytes: Defaults.slotDeleteMemoryBytes,
    mounts: [{ Type: "bind", Source: slotDir, Target: SlotMount }],
    runTimeoutMs: context.timeoutMs ?? Defaults.slotDeleteTimeoutMs,
    job: "wait",
  });
  if (ended.exitCode !== 0) {
    const said = `${ended.stderr}${ended.stdout}`.trim().slice(-QuotedOutput);
    throw new Error(`rm exited with ${ended.exitCode ?? "no status"}${said ? `: ${said}` : ""}`);
  }
}
