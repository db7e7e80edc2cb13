export type {
  BackendKind,
  ContainerFile,
  ContainerState,
  ContainerSummary,
  ExecOptions,
  ExecResult,
  SandboxSettings,
  SlotScope,
  TaskOverride,
} from "./types.js";
