/**
 * A worker's activity slots counted in attempts (issue 15). A batch activity (`runAttempts`) runs
 * `lanes` attempts at once, so a worker that took one activity per free activity slot could hold
 * `lanes` times more attempts than it has slots, the surplus waiting while another worker idles.
 * This slot supplier reserves a batch's `lanes` attempt slots before each poll for an activity task
 * and keeps them while a batch runs; any other activity (one attempt, a run record, a completeness
 * check) gives back all but one as soon as it is known what it is, so single attempts still fill
 * every slot. When fewer than `lanes` slots are free (single attempts hold some), one poll at a time
 * may reserve what is free; should it bring a batch, the batch takes the missing slots as they free
 * up (no poll is granted meanwhile). So a worker holds at most `lanes` − 1 attempts more than its
 * slots, and only then.
 */
import type { ActivitySlotInfo, CustomSlotSupplier, SlotMarkUsedContext, SlotPermit, SlotReleaseContext } from '@temporalio/worker'

/** The activity whose lanes hold a permit's whole reservation; every other one holds one slot. */
export const BATCH_ACTIVITY = 'runAttempts'

/** What a permit carries: its id (the supplier keeps what each one holds by it). */
interface LanePermit extends SlotPermit {
  id: number
}

/**
 * Attempt slots shared by a worker's activity pollers, taken a batch's lanes at a time in the order
 * asked for. `slots` should be a multiple of `lanes` (`attemptLanesFor` picks such lanes): batches
 * alone then fill every slot.
 */
export class LaneSlots {
  /** slots no permit holds; below zero while a batch that came on a partial reservation waits for its lanes */
  private free: number
  private nextId = 0
  /** slots each permit holds (or owes), by permit id */
  private readonly held = new Map<number, number>()
  /** the one permit granted for fewer than `lanes` slots and not yet used or released, if any */
  private partial: number | undefined
  private readonly waiting: { grant: (permit: LanePermit) => void }[] = []

  constructor(
    readonly slots: number,
    readonly lanes: number,
  ) {
    if (!(Number.isInteger(lanes) && lanes >= 1 && Number.isInteger(slots) && slots >= lanes)) {
      throw new RangeError(`attempt slots (${slots}) must be at least the lanes of a batch (${lanes}), both whole numbers from 1`)
    }
    this.free = slots
  }

  /** Slots no permit holds (negative: owed to a batch). */
  get available(): number {
    return this.free
  }

  /** A permit now, or null when none can be granted (or a poll is in line before). */
  tryReserve(): LanePermit | null {
    return this.waiting.length > 0 ? null : this.grant()
  }

  /** A permit once one can be granted; rejects with the signal's reason when aborted first. */
  reserve(signal: AbortSignal): Promise<LanePermit> {
    const now = this.tryReserve()
    if (now !== null) return Promise.resolve(now)
    if (signal.aborted) return Promise.reject(abortReason(signal))
    return new Promise<LanePermit>((resolve, reject) => {
      const entry = {
        grant: (permit: LanePermit) => {
          signal.removeEventListener('abort', onAbort)
          resolve(permit)
        },
      }
      const onAbort = (): void => {
        const at = this.waiting.indexOf(entry)
        if (at >= 0) this.waiting.splice(at, 1)
        reject(abortReason(signal))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(entry)
    })
  }

  /** The permit is used by an activity of this type: a batch holds its lanes, anything else one slot. */
  markUsed(permit: SlotPermit, activityType: string): void {
    const id = (permit as LanePermit).id
    const holds = this.held.get(id)
    if (holds === undefined) return
    if (this.partial === id) this.partial = undefined
    const needs = activityType === BATCH_ACTIVITY ? this.lanes : 1
    this.held.set(id, needs)
    this.free += holds - needs
    this.serveWaiting()
  }

  /** The permit is done with (its activity ended, or its poll gave up): its slots are free. */
  release(permit: SlotPermit): void {
    const id = (permit as LanePermit).id
    const holds = this.held.get(id)
    if (holds === undefined) return
    this.held.delete(id)
    if (this.partial === id) this.partial = undefined
    this.free += holds
    this.serveWaiting()
  }

  /** A batch's lanes when free; else what is free, to one poll at a time; else none. */
  private grant(): LanePermit | null {
    let slots = this.lanes
    if (this.free < this.lanes) {
      if (this.free < 1 || this.partial !== undefined) return null
      slots = this.free
    }
    const permit = { id: this.nextId++ }
    if (slots < this.lanes) this.partial = permit.id
    this.free -= slots
    this.held.set(permit.id, slots)
    return permit
  }

  private serveWaiting(): void {
    while (this.waiting.length > 0) {
      const permit = this.grant()
      if (permit === null) return
      this.waiting.shift()!.grant(permit)
    }
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? Object.assign(new Error('slot reservation aborted'), { name: 'AbortError' })
}

/** The Temporal activity slot supplier over `slots` attempt slots taken `lanes` at a time. */
export function laneSlotSupplier(slots: LaneSlots): CustomSlotSupplier<ActivitySlotInfo> {
  return {
    type: 'custom',
    reserveSlot: (_ctx, abortSignal) => slots.reserve(abortSignal),
    tryReserveSlot: () => slots.tryReserve(),
    markSlotUsed: (ctx: SlotMarkUsedContext<ActivitySlotInfo>) => slots.markUsed(ctx.permit, ctx.slotInfo.activityType),
    releaseSlot: (ctx: SlotReleaseContext<ActivitySlotInfo>) => slots.release(ctx.permit),
  }
}
