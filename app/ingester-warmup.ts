/**
 * Sample result messages for an ingester's JIT warm-up (issue 15, workers/ingester.ts). An ingester's
 * first 1,000-attempt run cost its main thread ~0.1 ms more CPU per attempt than its later ones: its
 * CPU profile put the difference in code V8 had not compiled hot yet — above all the result schemas'
 * validation (zod compiles each schema into a function of its own, slow until it has run a while),
 * then the message decoding and the row converters. The samples are real: mock attempts of the
 * bundled smoke suite run by the worker's own activity (app/engine-loop.ts), each message as a worker
 * would have published it — its subject, its JSON and its signature when the process holds the
 * results key. Nothing is published: the engine loop's bus is a stand-in that hands them over.
 *
 * They are made in a worker thread (`sampleResultMessagesInThread`): the engine it loads (~40 MB)
 * goes with the thread, and the ingester keeps only the messages.
 */
import { randomBytes } from 'node:crypto'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { headers as natsHeaders } from '@nats-io/nats-core'
import { SIGNATURE_HEADER } from '../store/bus-auth.js'
import { distEntry } from '../stack/paths.js'
import type { WarmupSample } from '../workers/ingester.js'

/** attempts per smoke task: every task's shape of message, a few of each (outcomes differ between attempts) */
const ATTEMPTS_PER_TASK = 4
/** marks the thread that makes the samples (workerData) */
const SAMPLE_THREAD = 'forgeIngesterWarmupSamples'
/** a thread that has not answered by then is stopped: the ingester goes on without a warm-up */
const SAMPLE_TIMEOUT_MS = 60_000

/** A sample as it crosses from the thread: its signature as text (headers do not clone). */
interface ThreadSample {
  subject: string
  data: Uint8Array
  signature?: string
}

/** The result messages of ATTEMPTS_PER_TASK mock attempts of each smoke task (one per attempt: its result with its stored trace), made in this thread. */
async function sampleResultMessages(resultsKey: string | undefined): Promise<ThreadSample[]> {
  const [{ resolveConfig }, { createLogger }, { runEngineLoop }, { signResultsWith }] = await Promise.all([import('../config/index.js'), import('../engine/logger.js'), import('./engine-loop.js'), import('../store/bus.js')])
  // signed as a worker signs them: the ingester checks them as it checks a worker's
  signResultsWith(resultsKey)
  const samples: ThreadSample[] = []
  await runEngineLoop(
    resolveConfig(),
    { suite: 'smoke', adapter: 'mock', attempts: ATTEMPTS_PER_TASK, workers: 1, concurrency: 4, seed: 'ingester-warmup' },
    // the plan is granted under a key made for it and dropped, as a warm worker's warm-up does (app/jit-warmup.ts)
    {
      key: randomBytes(32).toString('hex'),
      logger: createLogger('ingester-warmup', 'silent'),
      capture: ({ subject, data, headers }) => {
        const signature = headers?.get(SIGNATURE_HEADER)
        samples.push({ subject, data, ...(signature ? { signature } : {}) })
      },
    },
  )
  return samples
}

/**
 * The samples, made in a worker thread with this process's environment, signed with `resultsKey`;
 * rejects when the thread fails or takes longer than SAMPLE_TIMEOUT_MS.
 */
export function sampleResultMessagesInThread(resultsKey: string | undefined): Promise<WarmupSample[]> {
  return new Promise((resolve, reject) => {
    const thread = new Worker(distEntry('app/ingester-warmup.js'), { workerData: { [SAMPLE_THREAD]: true, resultsKey } })
    // an ingester that stops while the samples are made does not wait for them
    thread.unref()
    const timer = setTimeout(() => {
      void thread.terminate()
      reject(new Error(`no sample messages within ${SAMPLE_TIMEOUT_MS / 1000} s`))
    }, SAMPLE_TIMEOUT_MS).unref()
    thread.once('message', (samples: ThreadSample[]) => {
      clearTimeout(timer)
      void thread.terminate()
      resolve(
        samples.map(({ subject, data, signature }) => {
          if (signature === undefined) return { subject, data }
          const headers = natsHeaders()
          headers.set(SIGNATURE_HEADER, signature)
          return { subject, data, headers }
        }),
      )
    })
    thread.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    thread.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the sample thread exited (${code}) without samples`))
    })
  })
}

const data = workerData as Record<string, unknown> | null
if (!isMainThread && data?.[SAMPLE_THREAD] === true) {
  sampleResultMessages(typeof data['resultsKey'] === 'string' ? data['resultsKey'] : undefined).then(
    (samples) => parentPort?.postMessage(samples),
    (error: unknown) => {
      throw error
    },
  )
}
