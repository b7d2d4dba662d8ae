/** Errors of the LLM side of a worker: the gateway's configuration and the price table. */
import { ForgeError } from '../../core/errors.js'

/** Thrown when an adapter's model configuration (base_url, api_key_env, model) cannot work; retrying cannot fix it. */
export class LlmConfigError extends ForgeError {
  override name = 'LlmConfigError'
  readonly kind = 'config'
}

/** Thrown when a price table file cannot be read or does not validate; names the file and fields. */
export class PriceTableError extends ForgeError {
  override name = 'PriceTableError'
  readonly kind = 'config'
  readonly file: string

  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(`price table ${file}: ${message}`, options)
    this.file = file
  }
}
