/** Why the sandbox could not serve a turn, as the chat is told. */
export type SandboxProblem =
  | { readonly kind: "docker_unavailable"; readonly endpoint?: string | undefined }
  | { readonly kind: "image_missing"; readonly image?: string | undefined }
  /** The container or the engine went away while a command ran (`SandboxLostError`). */
  | { readonly kind: "sandbox_lost"; readonly reason?: string | undefined };

function field(error: object, name: string): string | undefined {
  const value = (error as Record<string, unknown>)[name];
  return typeof value === "string" ? value : undefined;
}

/**
 * Finds a sandbox availability problem in an error or its `cause` chain (agents may wrap the
 * sandbox's errors). Matched by error name so the check survives wrapping and duplicate
 * module instances.
 */
export function sandboxProblemOf(error: unknown): SandboxProblem | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current.name === "SandboxLostError") {
      return { kind: "sandbox_lost", reason: field(current, "reason") };
    }
    if (current.name === "DockerUnavailableError") {
      return { kind: "docker_unavailable", endpoint: field(current, "endpoint") };
    }
    if (current.name === "ImageMissingError") {
      return { kind: "image_missing", image: field(current, "image") };
    }
    current = current.cause;
  }
  return undefined;
}

/** The one line a chat gets when its sandbox cannot run. */
export function sandboxProblemText(problem: SandboxProblem): string {
  switch (problem.kind) {
    case "docker_unavailable":
      return "⚠️ The sandbox is unavailable right now (Docker cannot be reached). Please try again later.";
    case "image_missing":
      return "⚠️ The sandbox is unavailable: its container image is missing on the Docker host.";
    case "sandbox_lost":
      return "⚠️ The sandbox stopped while running that command (its container was removed or Docker went away). Send the message again to start a fresh one.";
  }
}
