export { Defaults } from "./defaults.js";
export { directoryUsage } from "./directory-usage.js";
export type { DockerConnectOptions } from "./engine.js";
export { connectDocker, DockerEngine } from "./engine.js";
export type { SandboxLossReason } from "./errors.js";
export {
  DockerUnavailableError,
  ImageMissingError,
  SandboxError,
  SandboxLostError,
  SlotDirectoryError,
} from "./errors.js";
export { missingImageAdvice } from "./image-advice.js";
export { inboxFileName } from "./inbox-name.js";
export { installIdOf } from "./install.js";
export type { InstanceId } from "./instance.js";
export { currentInstanceId, instanceLiveness } from "./instance.js";
export { LabelKeys, type ReplicaLabels, sanitizeLabelValue } from "./labels.js";
export {
  bindsSandboxMount,
  RegistryMountPoint,
  ScratchMountPoints,
  SlotMountPoints,
  volumeTarget,
} from "./mount-points.js";
export { maxOpenShellsOf } from "./open-shell-cap.js";
export { Sandbox } from "./sandbox.js";
export type { SandboxOptions } from "./sandbox-options.js";
export { sanitizeForPath } from "./sanitize-path.js";
export { sessionHash } from "./session-hash.js";
// The session shell's protocol scripts are exported for `bench:shell-cost`, which times them
// on a bare `docker exec` stream.
export { controllerCommand, controllerInit, shellQuote } from "./shell-scripts.js";
export { DefaultSlot, resolveSlot, TaskRegistry } from "./slot.js";
export type { SlotHomes, SlotKey, SlotKind, SlotTraits } from "./slot-key.js";
export {
  formatSlotKey,
  parseSlotKey,
  profileSlotKey,
  SlotKeyError,
  SlotKindTraits,
  slotDirectoryFor,
  slotRootOf,
  slotTraits,
} from "./slot-key.js";
export type {
  BackendKind,
  ContainerFile,
  ContainerInventory,
  ContainerLink,
  ContainerState,
  ContainerSummary,
  ExecOptions,
  ExecResult,
  ImagePullProgress,
  InboxClassifier,
  InboxFailure,
  InboxFile,
  InboxKind,
  InboxOptions,
  InboxRefused,
  InboxResult,
  InboxSaved,
  LegacyContainer,
  OutputListener,
  ReapOptions,
  ReapReport,
  ReapResult,
  RegistryCheck,
  SandboxSettings,
  SessionIdentity,
  SlotScope,
  TaskOverride,
} from "./types.js";
