import Regrade from './regrade.js'

/** `forge replay`: the name the aeh seed gives `forge regrade` — the same command, flags and output. */
export default class Replay extends Regrade {
  static override summary = "Replay a stored run: grade its stored traces again with the current graders, invariants and metrics (forge regrade under another name); no agent runs."
  static override description =
    'The same command as forge regrade: the new grades are stored as a new grading version beside the original rows, and ' +
    'attempts whose stored evidence cannot support the current graders are listed, not guessed. Use it after changing a ' +
    "suite's graders or invariants to see how a past run scores under them."
  static override examples = [
    '<%= config.bin %> replay --run-id <run-id>',
    '<%= config.bin %> replay --run-id <run-id> --dry-run --json',
    '<%= config.bin %> replay    # the latest run',
  ]
}
