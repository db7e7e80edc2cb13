/** Why the sandbox could not serve a turn, as the chat is told. */
export type SandboxProblem =
  | { readonly kind: "docker_unavailable"; readonly endpoint?: string | undefined }
  | { readonly kind: "image_missing"; readonly image?: string | undefined };

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
  return problem.kind === "docker_unavailable"
    ? "⚠️ The sandbox is unavailable right now (Docker cannot be reached). Please try again later."
    : "⚠️ The sandbox is unavailable: its container image is missing on the Docker host.";
}
