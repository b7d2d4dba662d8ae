/**
 * JetStream publishes as a worker makes them, one per attempt (issue 15). A JetStream publish is a
 * core NATS message with a reply subject: the stream that takes it answers there with its PubAck
 * (`{ stream, seq, duplicate }`) or an error (`{ error: { code, err_code, description } }`), and the
 * server answers a subject no stream takes with a 503 status. The client library's `js.publish` makes
 * each one a request — a request object, a timer and two Error objects per message (one thrown away
 * as it succeeds) — ~40 µs of a worker's CPU per message; here one subscription on an inbox of this
 * connection takes every answer, matched by a token, and one sweep a quarter-second fails what waited
 * too long: ~20 µs. Dedup is JetStream's as before: the message carries its `Nats-Msg-Id`.
 */
import { jetstream, type JetStreamClient, type JetStreamPublishOptions, type PubAck } from '@nats-io/jetstream'
import { createInbox, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Payload } from '@nats-io/nats-core'
import { BusError } from './errors.js'

const SWEEP_MS = 250
const DEFAULT_TIMEOUT_MS = 5_000
const decoder = new TextDecoder()

interface Waiting {
  subject: string
  deadline: number
  timeoutMs: number
  resolve: (ack: PubAck) => void
  reject: (error: Error) => void
}

/** Publishes to JetStream over `nc` and waits for each message's acknowledgement, as `js.publish` does for the options Forge uses. */
export class JetStreamPublisher {
  private readonly inbox: string
  private readonly waiting = new Map<string, Waiting>()
  private next = 0
  private sweep: NodeJS.Timeout | undefined
  private closed: Error | undefined

  constructor(private readonly nc: NatsConnection) {
    this.inbox = `${createInbox()}.`
    nc.subscribe(`${this.inbox}*`, { callback: (error, msg) => (error !== null ? this.failAll(error) : this.answer(msg)) })
    void nc.closed().then((error) => this.failAll(error instanceof Error ? error : new Error('the NATS connection is closed')))
  }

  publish(subject: string, body: Uint8Array, options: { msgID?: string; headers?: MsgHdrs; timeout?: number } = {}): Promise<PubAck> {
    if (this.closed !== undefined) return Promise.reject(this.closed)
    const headers = options.headers ?? (options.msgID !== undefined ? natsHeaders() : undefined)
    if (options.msgID !== undefined) headers!.set('Nats-Msg-Id', options.msgID)
    const token = (this.next++).toString(36)
    const timeoutMs = options.timeout ?? DEFAULT_TIMEOUT_MS
    return new Promise<PubAck>((resolve, reject) => {
      this.waiting.set(token, { subject, deadline: Date.now() + timeoutMs, timeoutMs, resolve, reject })
      this.sweep ??= setInterval(() => this.expire(), SWEEP_MS).unref()
      try {
        this.nc.publish(subject, body, { reply: this.inbox + token, ...(headers !== undefined ? { headers } : {}) })
      } catch (error) {
        this.settle(token)
        reject(error instanceof Error ? error : new Error(String(error)))
      }
    })
  }

  /** What is still waiting for its acknowledgement (tests). */
  get pending(): number {
    return this.waiting.size
  }

  private answer(msg: Msg): void {
    const token = msg.subject.slice(this.inbox.length)
    const waiting = this.settle(token)
    if (waiting === undefined) return // answered after its time: already failed
    const status = msg.headers?.code ?? 0
    if (msg.data.length === 0 && (status === 503 || msg.headers?.status === '503')) {
      waiting.reject(new BusError(`no JetStream stream takes ${waiting.subject} (no responders)`))
      return
    }
    let ack: { stream?: unknown; seq?: unknown; duplicate?: unknown; domain?: unknown; error?: { code?: unknown; err_code?: unknown; description?: unknown } }
    try {
      ack = JSON.parse(decoder.decode(msg.data)) as typeof ack
    } catch {
      waiting.reject(new BusError(`JetStream answered a publish to ${waiting.subject} with something that is not JSON (${JSON.stringify(decoder.decode(msg.data).slice(0, 80))})`))
      return
    }
    if (ack.error !== undefined) {
      waiting.reject(new BusError(`JetStream refused the message on ${waiting.subject}: ${String(ack.error.description ?? 'no description')} (code ${String(ack.error.code)}, ${String(ack.error.err_code)})`))
      return
    }
    if (typeof ack.stream !== 'string' || ack.stream === '' || typeof ack.seq !== 'number') {
      waiting.reject(new BusError(`JetStream answered a publish to ${waiting.subject} without a stream and sequence: ${JSON.stringify(ack).slice(0, 120)}`))
      return
    }
    waiting.resolve({ stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate === true, ...(typeof ack.domain === 'string' ? { domain: ack.domain } : {}) })
  }

  private settle(token: string): Waiting | undefined {
    const waiting = this.waiting.get(token)
    if (waiting === undefined) return undefined
    this.waiting.delete(token)
    if (this.waiting.size === 0 && this.sweep !== undefined) {
      clearInterval(this.sweep)
      this.sweep = undefined
    }
    return waiting
  }

  private expire(): void {
    const now = Date.now()
    for (const [token, waiting] of this.waiting) {
      if (waiting.deadline > now) continue
      this.settle(token)
      waiting.reject(new BusError(`no acknowledgement from JetStream for a message on ${waiting.subject} within ${waiting.timeoutMs} ms`))
    }
  }

  private failAll(error: Error): void {
    this.closed ??= error
    for (const token of [...this.waiting.keys()]) this.settle(token)?.reject(error)
  }
}

/**
 * `jetstream(nc)` whose `publish` goes through a JetStreamPublisher when given only what Forge's
 * publishers give (a msg id, headers, a timeout); any other option (an expectation on the stream)
 * takes the library's own publish.
 */
export function publishingJetStream(nc: NatsConnection): JetStreamClient {
  const js = jetstream(nc)
  const publisher = new JetStreamPublisher(nc)
  const libraryPublish = js.publish.bind(js)
  const publish = (subject: string, payload?: Payload, options?: Partial<JetStreamPublishOptions>): Promise<PubAck> => {
    const body = payload === undefined ? new Uint8Array() : typeof payload === 'string' ? new TextEncoder().encode(payload) : payload
    if (options !== undefined && Object.keys(options).some((key) => key !== 'msgID' && key !== 'headers' && key !== 'timeout')) return libraryPublish(subject, payload, options)
    return publisher.publish(subject, body, options)
  }
  // everything else is the library's client itself (its own fields, read and written through the proxy)
  return new Proxy(js, { get: (target, key) => (key === 'publish' ? publish : Reflect.get(target, key, target)) })
}
