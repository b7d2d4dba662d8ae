/**
 * How much of the results stream can go (issue 15: a 100,000-attempt sweep left 881 MiB on the
 * bus for the stream's 7-day max_age, on a laptop's disk, though every message was in the store
 * within a second). A message may go once it is stored — at or below the ingester consumer's ack
 * floor, which only moves past a message after its insert committed (or it was rejected and logged)
 * — and once it was published `keep` ago: the judge reads an attempt's trace back from the stream
 * while the run is young (and from the store after that). Pure: the stream is read through
 * `messageAtOrAfter`.
 */

/** A message of the stream: its sequence and when it was stored (ms since the epoch). */
export interface StreamMessageTime {
  seq: number
  time: number
}

export interface TrimInput {
  /** the stream's first sequence still stored */
  firstSeq: number
  /** the ingester consumer's ack floor: every message up to it is stored (0: none yet) */
  ackFloor: number
  /** messages stored at or after this time (ms) stay */
  keepSince: number
  /** the first message at or after `seq` (purges leave no holes, but a deleted message may); undefined past the end */
  messageAtOrAfter(seq: number): Promise<StreamMessageTime | undefined>
}

/**
 * The sequence to purge below (every message with a lower one goes), or undefined when nothing may
 * go. A binary search over [firstSeq, ackFloor]: JetStream stamps messages in sequence order, so "may
 * go" holds for a prefix; a few reads of message headers for a stream of any length.
 */
export async function trimCut(input: TrimInput): Promise<number | undefined> {
  const { firstSeq, ackFloor, keepSince } = input
  if (ackFloor < firstSeq) return undefined
  // keeps(s): the message at or after s must stay (not yet stored, or too young)
  const keeps = async (seq: number): Promise<boolean> => {
    const msg = await input.messageAtOrAfter(seq)
    return msg === undefined || msg.seq > ackFloor || msg.time >= keepSince
  }
  // the smallest seq in [firstSeq, ackFloor + 1] that keeps (ackFloor + 1 always does)
  let low = firstSeq
  let high = ackFloor + 1
  while (low < high) {
    const mid = low + Math.floor((high - low) / 2)
    if (await keeps(mid)) high = mid
    else low = mid + 1
  }
  return low > firstSeq ? low : undefined
}

/** How often the ingester trims: a tenth of the keep window, between once a second and once a minute. */
export function trimIntervalMs(keepMs: number): number {
  return Math.min(60_000, Math.max(1_000, Math.round(keepMs / 10)))
}
