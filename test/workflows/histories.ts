/**
 * Committed workflow histories (test/fixtures/histories/), in the proto JSON format of
 * `temporal workflow show --output json`. The SDK's own historyToJSON / historyFromJSON
 * (@temporalio/common/lib/proto-utils) cannot be used in this install: they pair protojson from the
 * protobufjs copy nested under @temporalio/common with types built by the copy nested under
 * @temporalio/proto (npm cannot hoist protobufjs 8 over grpc's 7), and throw "type must be a Type".
 * The same conversion, with the copy @temporalio/proto loads:
 */
import { createRequire } from 'node:module'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { History } from '@temporalio/common/lib/proto-utils.js'

export const historiesDir = new URL('../fixtures/histories/', import.meta.url)

const requireHere = createRequire(import.meta.url)
const protoRoot = requireHere('@temporalio/proto') as { temporal: { api: { history: { v1: { History: { fromObject(o: object): History } } } } } }
const { patchProtobufRoot } = requireHere('@temporalio/proto/lib/patch-protobuf-root') as { patchProtobufRoot<T>(root: T): T & { lookupType(name: string): unknown } }
const protojson = createRequire(requireHere.resolve('@temporalio/proto'))('protobufjs/ext/protojson') as {
  toJson(type: unknown, message: unknown): unknown
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): History
}
const historyType = patchProtobufRoot(protoRoot).lookupType('temporal.api.history.v1.History')

export const historyToJSON = (history: History): string =>
  `${JSON.stringify(protojson.toJson(historyType, protoRoot.temporal.api.history.v1.History.fromObject(history)), null, 2)}\n`
export const historyFromJSON = (json: string): History => protojson.fromJson(historyType, JSON.parse(json))

/** Writes `history` to `file` only when no such file exists (a committed history is written once, then only read). */
export function writeHistoryOnce(file: URL, history: History): void {
  mkdirSync(historiesDir, { recursive: true })
  try {
    writeFileSync(file, historyToJSON(history), { flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
}

export const readHistory = (file: URL): History => historyFromJSON(readFileSync(file, 'utf8'))
