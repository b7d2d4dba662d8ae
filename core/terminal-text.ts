/**
 * Text for a terminal. Much of what Forge prints came from an agent — its output, self-report, tool
 * arguments, stderr in an error — and a terminal obeys the control sequences in what it is given: an
 * agent's `ESC [8m` hides the text after it, `\r` writes over the line (a failed answer made to read
 * "pass"), `ESC ] 52` sets the reader's clipboard, `ESC ] 0` the window title, and bidirectional
 * overrides show text in another order than it has. Every line the CLI prints for a person goes
 * through `terminalSafe`: control characters (but newline and tab) and bidi controls are shown as
 * their escapes, `\u001b`, `\r`, `\u202e`, so a reader sees what the agent wrote instead of obeying it.
 */

/** C0 controls but \t and \n, DEL, C1 controls, and the bidirectional marks, embeddings, overrides and isolates. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/** `text` with every terminal control shown as its escape (the same string when it has none). */
export function terminalSafe(text: string): string {
  UNSAFE.lastIndex = 0
  if (!UNSAFE.test(text)) return text
  return text.replace(UNSAFE, (c) => (c === '\r' ? '\\r' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
}
