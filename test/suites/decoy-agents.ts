/**
 * Agents that take the decoy: for every task tagged `decoy`, a scripted agent that does the work
 * the plausible wrong way the task plants — the stale backup, the example config, last year's
 * prices, the translator instead of the author — through the real tools. Each must fail.
 */
import type { AgentTrace } from '../../core/contracts/index.js'
import type { AdapterContext, AgentAdapter } from '../../core/plugins.js'

type Tools = { call(name: string, args: Record<string, unknown>): Promise<any> }

function agent(name: string, script: (tools: Tools, golden: AgentTrace) => Promise<unknown>): (golden: AgentTrace) => AgentAdapter {
  return (golden) => ({
    name: `decoy_${name}`,
    async invoke(_payload, ctx: AdapterContext) {
      const tools: Tools = {
        async call(tool, args) {
          const outcome = await ctx.tools.call(tool, args)
          if (!outcome.ok) throw new Error(`${tool}: ${outcome.error}`)
          return outcome.result
        },
      }
      return { output: await script(tools, golden) }
    },
  })
}

const sumAmounts = (rows: { amount: string }[]): number => rows.reduce((a, r) => a + Number(r.amount), 0)

/** Sums every CSV anywhere in the workspace — the backup copy included. */
const sumEveryCsv = agent('every_csv', async (t) => {
  const files = (await t.call('list_files', { dir: '.' })) as string[]
  let total = 0
  for (const file of files.filter((f) => f.endsWith('.csv'))) total += sumAmounts(await t.call('read_csv', { path: file }))
  await t.call('write_file', { path: 'total.txt', content: total.toFixed(2) })
  return `total ${total.toFixed(2)}`
})

export const DECOY_AGENTS: Record<string, (golden: AgentTrace) => AgentAdapter> = {
  // core
  fd_sales_total: sumEveryCsv,
  fd_sales_total_missing_month: sumEveryCsv,
  fd_file_reports: agent('anything_report', async (t) => {
    const files = (await t.call('list_files', { dir: 'inbox' })) as string[]
    for (const file of files.filter((f) => f.includes('report'))) await t.call('move_file', { from: file, to: file.replace('inbox/', 'reports/') })
    return 'moved'
  }),
  fd_log_level: agent('example_config', async (t) => {
    const config = JSON.parse(await t.call('read_file', { path: 'config.example.json' }))
    config.logging.level = 'debug'
    await t.call('write_file', { path: 'config.example.json', content: `${JSON.stringify(config, null, 2)}\n` })
    return 'debug logging on'
  }),
  fd_receive_stock: agent('prefix_match', async (t) => {
    await t.call('sql_execute', { sql: "UPDATE products SET qty = qty + 5 WHERE sku LIKE 'SKU-104%'" })
    await t.call('sql_execute', { sql: "INSERT INTO stock_moves (sku, delta, reason) VALUES ('SKU-104', 5, 'delivery')" })
    return 'updated'
  }),
  mt_invoice_total: agent('archived_prices', async (t) => {
    const order = JSON.parse(await t.call('read_file', { path: 'order.json' })) as { lines: { sku: string; qty: number }[] }
    const prices = (await t.call('http_get', { path: '/prices_2023' })) as { id: string; price: number }[]
    const total = order.lines.reduce((a, l) => a + (prices.find((p) => p.id === l.sku)?.price ?? 0) * l.qty, 0)
    await t.call('write_file', { path: 'invoice.txt', content: total.toFixed(2) })
    return total.toFixed(2)
  }),
  mt_rates_to_db: agent('yesterdays_rates', async (t) => {
    const rates = (await t.call('http_get', { path: '/rates_yesterday' })) as { id: string; usd_per_unit: number; date: string }[]
    const values = rates.map((r) => `('${r.id}', ${r.usd_per_unit}, '${r.date}')`).join(', ')
    await t.call('sql_execute', { sql: `INSERT INTO rates (currency, usd_per_unit, as_of) VALUES ${values}` })
    return 'loaded'
  }),
  mt_todo_report: agent('whole_workspace', async (t) => {
    const hits = (await t.call('search_files', { pattern: 'TODO', dir: '.' })) as { path: string; line: number; text: string }[]
    await t.call('write_file', { path: 'todo.md', content: hits.map((h) => `${h.path}:${h.line}: ${h.text}\n`).join('') })
    return `${hits.length} TODOs`
  }),
  rt_book_author_b: agent('translator', async (t) => {
    const [book] = (await t.call('http_get', { path: '/books?isbn=978-0-00-000042-7' })) as { translator_id: string }[]
    const person = (await t.call('http_get', { path: `/authors/${book?.translator_id}` })) as { name: string }
    return person.name
  }),
  rt_refund_window: agent('returns_policy', async (t) => {
    for (let i = 0; i < 3; i += 1) {
      try {
        const text = (await t.call('http_get', { path: '/docs/policies/returns.md' })) as string
        return `${/(\d+) days/.exec(text)?.[1] ?? '?'} days`
      } catch {
        // the outage: try again
      }
    }
    return 'unknown'
  }),
  rt_open_incidents: agent('raw_count', async (t) => {
    const open = (await t.call('http_get', { path: '/incidents?status=open' })) as unknown[]
    return `${open.length}`
  }),
  bt_zip_fallback: agent('transposed_zip', async (t) => {
    const hits = (await t.call('search_files', { pattern: '94017' })) as { text: string }[]
    return hits[0]?.text.split(',')[1] ?? 'unknown'
  }),
  bt_search_offline: agent('any_budget', async (t) => {
    for (const file of (await t.call('list_files', { dir: 'notes' })) as string[]) {
      if (((await t.call('read_file', { path: file })) as string).toLowerCase().includes('budget')) return file
    }
    return 'none'
  }),
  sql_top_customers: agent('every_order', async (t) => {
    const rows = (await t.call('sql_query', {
      sql: 'SELECT c.name FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.id ORDER BY SUM(o.total) DESC LIMIT 3',
    })) as { name: string }[]
    return rows.map((r) => r.name).join(', ')
  }),

  // customer_support
  cs_where_is_my_order: agent('first_order', async (t) => {
    const [customer] = (await t.call('find_customer', { email: 'maya.ross@example.com' })) as { id: number }[]
    const [first] = (await t.call('get_orders', { customer_id: customer?.id })) as { id: number; status: string; tracking: string }[]
    await t.call('reply_to_ticket', { ticket_id: 'T-1001', message: `Your order ${first?.id} is ${first?.status}; tracking ${first?.tracking}.` })
    return 'replied'
  }),
  cs_order_count_duplicate_customer: agent('last_match', async (t) => {
    const matches = (await t.call('find_customer', { email: 'sam.okafor@example.com' })) as { id: number }[]
    const orders = (await t.call('get_orders', { customer_id: matches[matches.length - 1]?.id })) as unknown[]
    await t.call('reply_to_ticket', { ticket_id: 'T-1003', message: `You have placed ${orders.length} orders with us.` })
    return 'replied'
  }),
  cs_vip_escalation: agent('by_name', async (t) => {
    const [first] = (await t.call('find_customer', { name: 'Alex Kim' })) as { plan: string }[]
    if (first?.plan === 'vip') await t.call('update_ticket', { ticket_id: 'T-1007', priority: 'high' })
    return `the customer is on the ${first?.plan} plan`
  }),
}
