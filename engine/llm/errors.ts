/** Errors of the LLM side of a worker: the gateway's configuration and the price table. */

/** Thrown when an adapter's model configuration (base_url, api_key_env, model) cannot work; retrying cannot fix it. */
export class LlmConfigError extends Error {
  override name = 'LlmConfigError'
}

/** Thrown when a price table file cannot be read or does not validate; names the file and fields. */
export class PriceTableError extends Error {
  override name = 'PriceTableError'
  readonly file: string

  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`price table ${file}: ${message}`, options)
    this.file = file
  }
}
