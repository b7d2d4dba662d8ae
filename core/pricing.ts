/**
 * Versioned price tables: what a model's tokens cost. Every run stamps the table's version and
 * date; an unknown model's cost is unavailable (null), never zero.
 */
import { z } from 'zod'

export const ModelPrice = z
  .object({
    /** USD per million input (prompt) tokens */
    input_per_mtok: z.number().nonnegative(),
    /** USD per million output (completion) tokens */
    output_per_mtok: z.number().nonnegative(),
  })
  .strict()
export type ModelPrice = z.infer<typeof ModelPrice>

export const PriceTable = z
  .object({
    version: z.string().min(1),
    /** the day the prices were read off the providers' pages, YYYY-MM-DD */
    date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD'),
    currency: z.literal('USD').default('USD'),
    models: z.record(z.string().min(1), ModelPrice),
  })
  .strict()
export type PriceTable = z.infer<typeof PriceTable>

/** The price of a model: an exact name first, then the longest `prefix*` entry that matches. */
export function priceOf(table: PriceTable, model: string): ModelPrice | undefined {
  const exact = table.models[model]
  if (exact) return exact
  let best: { prefix: string; price: ModelPrice } | undefined
  for (const [name, price] of Object.entries(table.models)) {
    if (!name.endsWith('*')) continue
    const prefix = name.slice(0, -1)
    if (model.startsWith(prefix) && (!best || prefix.length > best.prefix.length)) best = { prefix, price }
  }
  return best?.price
}

/** USD cost of some token usage, or null when the model has no price in the table. */
export function costOf(table: PriceTable, model: string, usage: { input_tokens: number; output_tokens: number }): number | null {
  const price = priceOf(table, model)
  if (!price) return null
  return (usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) / 1_000_000
}

/** `version (date)`, as stamped on runs and printed by reports. */
export function priceTableLabel(table: PriceTable): string {
  return `${table.version} (${table.date})`
}
