// One "other process" for the sandbox bench: acquires a slot whose container another
// process made, and prints how long that acquire took (Node start-up excluded).
// Usage: node sandbox-acquire-child.mjs <profile> <profileHome> <rootHome> <image> <slot> [dockerHost]
// (the parent's engine: testDockerHost(), empty for the default socket)
import { connectDocker, Defaults, Sandbox } from "@mediagate/sandbox";

const [profile, profileHome, rootHome, image, slot, host] = process.argv.slice(2);
const sandbox = new Sandbox({
  engine: connectDocker({ host: host === "" ? undefined : host }),
  profile,
  profileHome,
  rootHome,
  settings: { ...Defaults.settings, image },
});
const started = performance.now();
const { containerId } = await sandbox.acquire(slot);
const ms = performance.now() - started;
await sandbox.shutdown();
process.stdout.write(`${JSON.stringify({ ms, containerId })}\n`);
