/** Errors of the agent sandbox. */

/** Thrown when this machine cannot create an agent sandbox (no Linux namespaces, a missing tool); says why and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
  readonly reason: string

  constructor(reason: string) {
    super(`cannot create an agent sandbox on this machine: ${reason}. Run agents unsandboxed with --no-sandbox (adapter config "sandbox": false); every attempt is then marked degraded`)
    this.reason = reason
  }
}

/** Thrown when a sandbox was asked for something it must refuse (an agent inside the suite, a missing read-only path). */
export class SandboxConfigError extends Error {
  override name = 'SandboxConfigError'
}

/** Thrown when the sandbox's own set-up failed before the agent started (a mount, a cgroup); carries the init's stderr. */
export class SandboxSetupError extends Error {
  override name = 'SandboxSetupError'
}
