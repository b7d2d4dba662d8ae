/**
 * What fits on the bus. NATS refuses a message over the server's `max_payload` (1 MiB by default, 8 MB
 * in the embedded stack), so a result that big would be lost. Tasks are checked before a run starts;
 * the few fields of a result that repeat task content are truncated with a marker, never dropped. Pure.
 */
import type { Task } from './contracts/index.js'

/** The most of a task's instruction a published result carries; the verbatim text stays in the suite (suite_hash). */
export const RESULT_INSTRUCTION_BYTES = 64 * 1024

/** Room left in a message for headers and the rest of the result. */
export const MESSAGE_HEADROOM_BYTES = 64 * 1024

export interface TaskSizeProblem {
  task_id: string
  field: 'instruction' | 'input'
  bytes: number
  limit: number
}

export interface TaskSizeCheck {
  /** fields too big for any message of the bus: the run must not start */
  refused: TaskSizeProblem[]
  /** instructions stored truncated (with a marker) in every result: worth a notice, not an error */
  truncated: TaskSizeProblem[]
}

const bytesOf = (value: unknown): number => Buffer.byteLength(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''), 'utf8')

/**
 * Checks each task's instruction and input against the bus's `max_payload`: a field that cannot fit in
 * one message (with headroom) is refused; an instruction longer than RESULT_INSTRUCTION_BYTES is noted.
 */
export function checkTaskSizes(tasks: readonly Pick<Task, 'id' | 'instruction' | 'input'>[], maxPayload: number): TaskSizeCheck {
  const limit = Math.max(0, maxPayload - MESSAGE_HEADROOM_BYTES)
  const refused: TaskSizeProblem[] = []
  const truncated: TaskSizeProblem[] = []
  for (const task of tasks) {
    const instruction = bytesOf(task.instruction)
    const input = bytesOf(task.input)
    if (instruction > limit) refused.push({ task_id: task.id, field: 'instruction', bytes: instruction, limit })
    else if (instruction > RESULT_INSTRUCTION_BYTES) truncated.push({ task_id: task.id, field: 'instruction', bytes: instruction, limit: RESULT_INSTRUCTION_BYTES })
    if (input > limit) refused.push({ task_id: task.id, field: 'input', bytes: input, limit })
  }
  return { refused, truncated }
}

/** `12.3 MB` / `640 KiB`-style sizes for messages. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${bytes} B`
}
