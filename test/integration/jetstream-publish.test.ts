/**
 * The worker's JetStream publishes (store/jetstream-publish.ts) on a real nats-server: a message is
 * stored with its headers and acknowledged with its stream and sequence, a second one of the same
 * msg id is a duplicate the stream drops, and every way a publish can fail says so — no stream takes
 * the subject, the stream refuses it, no acknowledgement comes in time, the connection closes —
 * with nothing left waiting. Options Forge does not give go to the library's own publish.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient } from '@nats-io/jetstream'
import { headers as natsHeaders } from '@nats-io/nats-core'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JetStreamPublisher, publishingJetStream } from '../../store/jetstream-publish.js'
import { startNats, type NatsCluster } from '../helpers/fleet.js'

let dir: string
let nats: NatsCluster
let nc: NatsConnection
const body = (text: string): Uint8Array => new TextEncoder().encode(text)

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'forge-js-publish-'))
  nats = await startNats(dir)
  nc = await connect({ servers: nats.url })
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({ name: 'T', subjects: ['t.>'], storage: StorageType.File, retention: RetentionPolicy.Limits, num_replicas: 1 })
  // takes two messages, then refuses the next (discard new)
  await jsm.streams.add({ name: 'FULL', subjects: ['full.>'], storage: StorageType.File, max_msgs: 2, discard: DiscardPolicy.New, num_replicas: 1 })
})
afterAll(async () => {
  await nc?.close()
  await nats?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('JetStreamPublisher', () => {
  it('stores a message with its headers and returns its stream and sequence; the same msg id again is a duplicate, stored once', async () => {
    const publisher = new JetStreamPublisher(nc)
    const headers = natsHeaders()
    headers.set('Forge-Signature', 'sig-1')
    const first = await publisher.publish('t.a', body('one'), { msgID: 'm-1', headers, timeout: 5_000 })
    expect(first).toMatchObject({ stream: 'T', duplicate: false })
    expect(first.seq).toBeGreaterThan(0)
    const again = await publisher.publish('t.a', body('one again'), { msgID: 'm-1', timeout: 5_000 })
    expect(again).toMatchObject({ stream: 'T', seq: first.seq, duplicate: true })
    const stored = await (await jetstreamManager(nc)).streams.getMessage('T', { seq: first.seq })
    expect(new TextDecoder().decode(stored!.data)).toBe('one')
    expect(stored!.header.get('Forge-Signature')).toBe('sig-1')
    expect(stored!.header.get('Nats-Msg-Id')).toBe('m-1')
    expect((await (await jetstreamManager(nc)).streams.info('T')).state.messages).toBe(1)
    expect(publisher.pending).toBe(0)
  })

  it('publishes many at once, each answered as its own', async () => {
    const publisher = new JetStreamPublisher(nc)
    const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => publisher.publish(`t.many.${i}`, body(String(i)), { msgID: `many-${i}` })))
    expect(new Set(acks.map((a) => a.seq)).size).toBe(200)
    expect(acks.every((a) => a.stream === 'T' && !a.duplicate)).toBe(true)
    expect(publisher.pending).toBe(0)
  })

  it('fails, naming the subject, when no stream takes it, when the stream refuses it, and when no acknowledgement comes in time', async () => {
    const publisher = new JetStreamPublisher(nc)
    await expect(publisher.publish('nostream.x', body('x'), { msgID: 'n-1' })).rejects.toThrow(/no JetStream stream takes nostream\.x \(no responders\)/)

    await publisher.publish('full.a', body('1'), { msgID: 'f-1' })
    await publisher.publish('full.a', body('2'), { msgID: 'f-2' })
    await expect(publisher.publish('full.a', body('3'), { msgID: 'f-3' })).rejects.toThrow(/JetStream refused the message on full\.a: maximum messages exceeded \(code 503, 10077\)/)

    // a subscriber that never answers: not "no responders", just no acknowledgement
    const silent = nc.subscribe('silent.x')
    try {
      const started = Date.now()
      await expect(publisher.publish('silent.x', body('x'), { msgID: 's-1', timeout: 300 })).rejects.toThrow(/no acknowledgement from JetStream for a message on silent\.x within 300 ms/)
      expect(Date.now() - started).toBeGreaterThanOrEqual(300)
    } finally {
      silent.unsubscribe()
    }
    expect(publisher.pending).toBe(0)
  })

  it('fails what waits and what comes after when its connection closes', async () => {
    const own = await connect({ servers: nats.url })
    const publisher = new JetStreamPublisher(own)
    const silent = own.subscribe('silent.y')
    const waiting = publisher.publish('silent.y', body('y'), { timeout: 60_000 })
    await own.flush()
    silent.unsubscribe()
    await own.close()
    await expect(waiting).rejects.toThrow()
    await expect(publisher.publish('t.after', body('z'))).rejects.toThrow()
    expect(publisher.pending).toBe(0)
  })
})

describe('publishingJetStream', () => {
  it("publishes Forge's messages through the publisher and any other option through the library; the rest is the library's client", async () => {
    const js: JetStreamClient = publishingJetStream(nc)
    const ack = await js.publish('t.js', body('via publisher'), { msgID: 'js-1', timeout: 5_000 })
    expect(ack).toMatchObject({ stream: 'T', duplicate: false })
    // an expectation on the stream: the library's publish checks it (and the server refuses a wrong one)
    const expected = await js.publish('t.js', body('with expectation'), { expect: { lastSequence: ack.seq } })
    expect(expected.seq).toBe(ack.seq + 1)
    await expect(js.publish('t.js', body('wrong expectation'), { expect: { lastSequence: 1 } })).rejects.toThrow(/wrong last sequence/)
    // everything else is the library's client
    expect(typeof js.consumers.get).toBe('function')
    const info = await (await js.jetstreamManager()).streams.info('T')
    expect(info.state.last_seq).toBe(expected.seq)
  })
})
