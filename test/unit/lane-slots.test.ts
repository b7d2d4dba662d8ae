import { describe, expect, it } from 'vitest'
import { attemptLanesFor } from '../../app/plan-run.js'
import { attemptBatchSize } from '../../workflows/attempt-batches.js'
import { BATCH_ACTIVITY, LaneSlots, laneSlotSupplier } from '../../workers/lane-slots.js'

/** Whether a promise has settled by the time the queued microtasks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false
  promise.then(
    () => (done = true),
    () => (done = true),
  )
  await new Promise((resolve) => setImmediate(resolve))
  return done
}

const never = new AbortController().signal

describe('LaneSlots: a worker’s attempt slots, reserved a batch’s lanes at a time', () => {
  it('grants polls while a batch’s lanes are free, then makes the next one wait until a batch ends', async () => {
    const slots = new LaneSlots(8, 4)
    const first = await slots.reserve(never)
    const second = await slots.reserve(never)
    slots.markUsed(first, BATCH_ACTIVITY)
    slots.markUsed(second, BATCH_ACTIVITY)
    expect(slots.available).toBe(0)
    const third = slots.reserve(never)
    expect(await settled(third)).toBe(false)
    slots.release(first)
    expect(await settled(third)).toBe(true)
    expect(slots.available).toBe(0)
  })

  it('lets any other activity keep one slot, so single attempts fill every slot', async () => {
    const slots = new LaneSlots(4, 4)
    const permits = []
    for (let i = 0; i < 4; i++) {
      const permit = await slots.reserve(never)
      slots.markUsed(permit, 'runAttempt')
      permits.push(permit)
    }
    expect(slots.available).toBe(0)
    expect(await settled(slots.reserve(never))).toBe(false)
    slots.release(permits[0]!)
    expect(slots.available).toBe(0)
  })

  it('grants what is free to one poll at a time; a batch on it takes its missing lanes as they free up', async () => {
    const slots = new LaneSlots(4, 4)
    const single = await slots.reserve(never)
    slots.markUsed(single, 'runAttempt')
    const partial = await slots.reserve(never)
    expect(slots.available).toBe(0)
    // one partial reservation at a time: the next poll waits even after a slot frees
    const next = slots.reserve(never)
    slots.release(single)
    expect(await settled(next)).toBe(false)
    expect(slots.available).toBe(1)
    // the partial poll brought a batch: it owes one lane beyond the freed slot, nothing is granted meanwhile
    slots.markUsed(partial, BATCH_ACTIVITY)
    expect(slots.available).toBe(0)
    expect(await settled(next)).toBe(false)
    slots.release(partial)
    expect(await settled(next)).toBe(true)
  })

  it('holds at most lanes − 1 attempts beyond its slots, whatever the mix of activities', async () => {
    const slots = new LaneSlots(6, 3)
    const held: { permit: object; type: string }[] = []
    const types = ['runAttempt', BATCH_ACTIVITY, 'recordRunStatus', BATCH_ACTIVITY, BATCH_ACTIVITY, 'runAttempt']
    const accepted = (): number => held.reduce((sum, h) => sum + (h.type === BATCH_ACTIVITY ? 3 : 1), 0)
    for (let round = 0; round < 60; round++) {
      // take every poll that is granted, then end the oldest activity
      for (let permit = slots.tryReserve(); permit !== null; permit = slots.tryReserve()) {
        const type = types[(round + held.length) % types.length]!
        slots.markUsed(permit, type)
        held.push({ permit, type })
        expect(accepted()).toBeLessThanOrEqual(6 + 3 - 1)
      }
      slots.release(held.shift()!.permit)
    }
    for (const h of held) slots.release(h.permit)
    expect(slots.available).toBe(6)
  })

  it('frees a single attempt’s one slot once, whatever order the calls come in', async () => {
    const slots = new LaneSlots(6, 3)
    const one = await slots.reserve(never)
    slots.markUsed(one, 'runAttempt')
    slots.markUsed(one, 'runAttempt')
    expect(slots.available).toBe(5)
    slots.release(one)
    slots.release(one)
    expect(slots.available).toBe(6)
  })

  it('serves waiting polls in the order they asked, and a poll that gave up is skipped', async () => {
    const slots = new LaneSlots(2, 2)
    const held = await slots.reserve(never)
    const gaveUp = new AbortController()
    const order: string[] = []
    const a = slots.reserve(gaveUp.signal).then(
      () => order.push('a'),
      (error: unknown) => order.push(`a aborted: ${(error as Error).message}`),
    )
    const b = slots.reserve(never).then((permit) => (order.push('b'), permit))
    gaveUp.abort(new Error('poller stopped'))
    await a
    expect(slots.tryReserve()).toBeNull() // b is in line
    slots.release(held)
    slots.release(await b)
    expect(order).toEqual(['a aborted: poller stopped', 'b'])
    expect(slots.available).toBe(2)
  })

  it('refuses an eager reservation while a poll waits or nothing is free', async () => {
    const slots = new LaneSlots(4, 2)
    const a = slots.tryReserve()
    const b = slots.tryReserve()
    expect([a, b].every((p) => p !== null)).toBe(true)
    expect(slots.tryReserve()).toBeNull()
    slots.markUsed(a!, BATCH_ACTIVITY)
    slots.markUsed(b!, BATCH_ACTIVITY)
    const waiting = slots.reserve(never)
    expect(slots.tryReserve()).toBeNull()
    slots.release(b!)
    expect(await settled(waiting)).toBe(true)
    // the waiting poll took the freed lanes: none left for an eager one
    expect(slots.tryReserve()).toBeNull()
  })

  it('rejects an already aborted reservation at once', async () => {
    const slots = new LaneSlots(1, 1)
    await slots.reserve(never)
    const aborted = AbortSignal.abort()
    await expect(slots.reserve(aborted)).rejects.toMatchObject({ name: 'AbortError' })
  })

  it('refuses fewer slots than a batch has lanes', () => {
    expect(() => new LaneSlots(3, 4)).toThrow(/attempt slots \(3\) must be at least the lanes of a batch \(4\)/)
    expect(() => new LaneSlots(0, 1)).toThrow(RangeError)
    expect(() => new LaneSlots(4, 0)).toThrow(RangeError)
    expect(() => new LaneSlots(4.5, 2)).toThrow(RangeError)
  })

  it('is the Temporal activity slot supplier the worker runs with', async () => {
    const slots = new LaneSlots(4, 2)
    const supplier = laneSlotSupplier(slots)
    expect(supplier.type).toBe('custom')
    const permit = await supplier.reserveSlot({ slotType: 'activity', taskQueue: 'q', workerIdentity: 'w', workerBuildId: '', isSticky: false }, never)
    supplier.markSlotUsed({ slotInfo: { type: 'activity', activityType: 'runAttempt' }, permit })
    expect(slots.available).toBe(3)
    supplier.releaseSlot({ slotInfo: { type: 'activity', activityType: 'runAttempt' }, permit })
    expect(slots.available).toBe(4)
    const unused = supplier.tryReserveSlot({ slotType: 'activity', taskQueue: 'q', workerIdentity: 'w', workerBuildId: '', isSticky: false })
    expect(slots.available).toBe(2)
    // a poll that timed out releases its permit unused
    supplier.releaseSlot({ permit: unused! })
    expect(slots.available).toBe(4)
  })
})

describe('attemptLanesFor: the lanes of a batch on workers of so many slots', () => {
  it('picks the largest divisor of the slots up to 10, so reserving lanes at a time leaves none unused', () => {
    expect([1, 4, 7, 10, 12, 13, 32, 38, 50, 100, 625].map((slots) => attemptLanesFor(slots))).toEqual([1, 4, 7, 10, 6, 1, 8, 2, 10, 10, 5])
  })

  it('takes more lanes, up to 50, only where the run fills them: a batch reserves its lanes whatever it holds', () => {
    // 1,000 attempts on one worker of 100 slots, 100 in flight: 2 batches of 500 in 50 lanes
    expect(attemptLanesFor(100, { maxInFlight: 100, processes: 1, shardAttempts: 1000 })).toBe(50)
    expect(attemptBatchSize({ attempts_per_activity: 10, max_in_flight: 100 }, 1000, 50)).toBe(500)
    // 5 attempts (smoke, --attempts 1) on 50 slots: batches of 2 would hold 50 slots each — 10 lanes, as without the run
    expect(attemptLanesFor(50, { maxInFlight: 200, processes: 1, shardAttempts: 5 })).toBe(10)
    // 100 attempts, 200 in flight: no batch of more than 10 lanes fills them
    expect(attemptLanesFor(50, { maxInFlight: 200, processes: 1, shardAttempts: 100 })).toBe(10)
    // 4 processes × 100 slots at 100 in flight: a batch for each process at most 25 lanes; 1,000 attempts fill them
    expect(attemptLanesFor(100, { maxInFlight: 100, processes: 4, shardAttempts: 1000 })).toBe(25)
    // 200 in flight on one process of 100 slots: 50 lanes, 4 batches of 250
    expect(attemptLanesFor(100, { maxInFlight: 200, processes: 1, shardAttempts: 1000 })).toBe(50)
    // slots that no lane count over 10 divides: the old rule
    expect(attemptLanesFor(53, { maxInFlight: 100, processes: 1, shardAttempts: 1000 })).toBe(1)
    expect(attemptLanesFor(32, { maxInFlight: 100, processes: 1, shardAttempts: 1000 })).toBe(32)
  })
})
