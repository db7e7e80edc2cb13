export { Defaults } from "./defaults.js";
export type { DockerConnectOptions } from "./engine.js";
export { connectDocker, DockerEngine } from "./engine.js";
export {
  DockerUnavailableError,
  ImageMissingError,
  SandboxError,
  SlotDirectoryError,
} from "./errors.js";
export { LabelKeys, sanitizeLabelValue } from "./labels.js";
export type { SandboxOptions } from "./sandbox.js";
export { Sandbox } from "./sandbox.js";
export { sanitizeForPath } from "./sanitize-path.js";
export { sessionHash } from "./session-hash.js";
export { DefaultSlot, resolveSlot, TaskRegistry } from "./slot.js";
export type {
  BackendKind,
  ContainerFile,
  ContainerLink,
  ContainerState,
  ContainerSummary,
  ExecOptions,
  ExecResult,
  ReapResult,
  SandboxSettings,
  SlotScope,
  TaskOverride,
} from "./types.js";
