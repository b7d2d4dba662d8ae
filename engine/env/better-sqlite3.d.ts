// The part of better-sqlite3's API that Forge uses (the package ships no types of its own).
declare module 'better-sqlite3' {
  namespace Database {
    interface RunResult {
      changes: number
      lastInsertRowid: number | bigint
    }
    interface Statement {
      readonly readonly: boolean
      readonly reader: boolean
      all(...params: unknown[]): unknown[]
      get(...params: unknown[]): unknown
      run(...params: unknown[]): RunResult
    }
    interface Options {
      readonly?: boolean
      fileMustExist?: boolean
      timeout?: number
    }
    interface Database {
      readonly open: boolean
      readonly inTransaction: boolean
      prepare(sql: string): Statement
      exec(sql: string): this
      pragma(source: string, options?: { simple?: boolean }): unknown
      transaction<F extends (...args: never[]) => unknown>(fn: F): F
      close(): this
    }
  }
  interface DatabaseConstructor {
    new (filename?: string, options?: Database.Options): Database.Database
  }
  const Database: DatabaseConstructor
  export = Database
}
