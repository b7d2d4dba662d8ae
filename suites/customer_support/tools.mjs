/**
 * Tools of the customer_support suite: a helpdesk (the HTTP fixture service: tickets and their
 * replies), the shop's database (SQLite: customers, orders, refunds, payment methods) and the
 * team's workspace (policies, an outbox). Each tool reaches only this attempt's instances, through
 * `ctx.env`; non-2xx answers and bad input are thrown as errors, as a real client would raise them.
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'

/** @typedef {import('../../core/plugins.js').ToolDefinition} ToolDefinition */
/** @typedef {import('../../core/plugins.js').ToolRunContext} ToolRunContext */

/** @param {unknown} value @param {string} name */
function text(value, name) {
  if (typeof value !== 'string' || value.trim() === '') throw new Error(`${name} must be a non-empty string`)
  return value.trim()
}

/** @param {unknown} value @param {string} name */
function integer(value, name) {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value
  if (typeof n !== 'number' || !Number.isInteger(n)) throw new Error(`${name} must be an integer`)
  return n
}

/** @param {ToolRunContext} ctx */
const helpdesk = (ctx) => {
  const handle = ctx.env?.['helpdesk']
  if (handle === undefined || handle.kind !== 'http') throw new Error('the helpdesk is not reachable from this task')
  return handle
}
/** @param {ToolRunContext} ctx */
const shop = (ctx) => {
  const handle = ctx.env?.['shop']
  if (handle === undefined || handle.kind !== 'sqlite') throw new Error('the shop database is not reachable from this task')
  return handle.db
}
/** @param {ToolRunContext} ctx */
const workspace = (ctx) => {
  const handle = ctx.env?.['workspace']
  if (handle === undefined || handle.kind !== 'workspace') throw new Error('the team workspace is not reachable from this task')
  return handle.root
}

/** @param {ToolRunContext} ctx @param {string} method @param {string} route @param {unknown} [body] */
async function call(ctx, method, route, body) {
  const answer = await helpdesk(ctx).request(method, route, body)
  if (answer.status >= 400) {
    const detail = answer.body !== null && typeof answer.body === 'object' ? /** @type {Record<string, unknown>} */ (answer.body) : {}
    throw new Error(`helpdesk answered HTTP ${answer.status} ${String(detail['error'] ?? '')}: ${String(detail['message'] ?? '')}`)
  }
  return answer.body
}

const TICKET_ID = /^T-\d+$/
/** @param {unknown} value */
const ticketId = (value) => {
  const id = text(value, 'ticket_id')
  if (!TICKET_ID.test(id)) throw new Error(`not a ticket id: ${id} (like T-1001)`)
  return id
}

/** @type {ToolDefinition[]} */
export const tools = [
  {
    name: 'list_tickets',
    description: 'Lists helpdesk tickets, optionally only those with a given status (open, pending, resolved, closed).',
    input_schema: { type: 'object', properties: { status: { type: 'string' } }, additionalProperties: false },
    run: (args, ctx) => call(ctx, 'GET', args.status === undefined ? '/tickets' : `/tickets?status=${encodeURIComponent(text(args.status, 'status'))}`),
  },
  {
    name: 'get_ticket',
    description: 'Reads one ticket with the replies on it so far.',
    input_schema: { type: 'object', properties: { ticket_id: { type: 'string', description: 'like T-1001' } }, required: ['ticket_id'], additionalProperties: false },
    async run(args, ctx) {
      const id = ticketId(args.ticket_id)
      const ticket = await call(ctx, 'GET', `/tickets/${id}`)
      const replies = await call(ctx, 'GET', `/replies?ticket_id=${id}`)
      return { ...ticket, replies }
    },
  },
  {
    name: 'reply_to_ticket',
    description: 'Posts a reply to the customer on a ticket (they receive it by email).',
    input_schema: {
      type: 'object',
      properties: { ticket_id: { type: 'string' }, message: { type: 'string' } },
      required: ['ticket_id', 'message'],
      additionalProperties: false,
    },
    run: (args, ctx) => call(ctx, 'POST', '/replies', { ticket_id: ticketId(args.ticket_id), from: 'support', message: text(args.message, 'message') }),
  },
  {
    name: 'update_ticket',
    description: 'Changes the status (open, pending, resolved, closed) and/or priority (low, normal, high) of a ticket.',
    input_schema: {
      type: 'object',
      properties: { ticket_id: { type: 'string' }, status: { type: 'string', enum: ['open', 'pending', 'resolved', 'closed'] }, priority: { type: 'string', enum: ['low', 'normal', 'high'] } },
      required: ['ticket_id'],
      additionalProperties: false,
    },
    run(args, ctx) {
      /** @type {Record<string, unknown>} */
      const fields = {}
      if (args.status !== undefined) fields['status'] = args.status
      if (args.priority !== undefined) fields['priority'] = args.priority
      if (Object.keys(fields).length === 0) throw new Error('give a status or a priority to change')
      return call(ctx, 'PATCH', `/tickets/${ticketId(args.ticket_id)}`, fields)
    },
  },
  {
    name: 'refresh_token',
    description: 'Refreshes the helpdesk access token (after a token_expired error).',
    input_schema: { type: 'object', properties: {}, additionalProperties: false },
    async run(_args, ctx) {
      await helpdesk(ctx).refresh()
      return { refreshed: true }
    },
  },
  {
    name: 'find_customer',
    description: 'Finds customers by email (exact, any case) or by name (exact); returns every match.',
    input_schema: { type: 'object', properties: { email: { type: 'string' }, name: { type: 'string' } }, additionalProperties: false },
    run(args, ctx) {
      if (args.email !== undefined) return shop(ctx).prepare('SELECT id, name, email, plan FROM customers WHERE lower(email) = lower(?) ORDER BY id').all(text(args.email, 'email'))
      if (args.name !== undefined) return shop(ctx).prepare('SELECT id, name, email, plan FROM customers WHERE name = ? ORDER BY id').all(text(args.name, 'name'))
      throw new Error('give an email or a name')
    },
  },
  {
    name: 'get_orders',
    description: "Lists a customer's orders, oldest first.",
    input_schema: { type: 'object', properties: { customer_id: { type: 'integer' } }, required: ['customer_id'], additionalProperties: false },
    run: (args, ctx) => shop(ctx).prepare('SELECT * FROM orders WHERE customer_id = ? ORDER BY id').all(integer(args.customer_id, 'customer_id')),
  },
  {
    name: 'get_order',
    description: 'Reads one order by its number.',
    input_schema: { type: 'object', properties: { order_id: { type: 'integer' } }, required: ['order_id'], additionalProperties: false },
    run(args, ctx) {
      const id = integer(args.order_id, 'order_id')
      const order = shop(ctx).prepare('SELECT * FROM orders WHERE id = ?').get(id)
      if (order === undefined) throw new Error(`no order ${id}`)
      return order
    },
  },
  {
    name: 'issue_refund',
    description: 'Refunds an order to its original payment method: records the refund and marks the order refund_pending.',
    input_schema: {
      type: 'object',
      properties: { order_id: { type: 'integer' }, amount: { type: 'number' }, reason: { type: 'string' } },
      required: ['order_id', 'amount', 'reason'],
      additionalProperties: false,
    },
    run(args, ctx) {
      const db = shop(ctx)
      const id = integer(args.order_id, 'order_id')
      const order = /** @type {{ total: number } | undefined} */ (db.prepare('SELECT total FROM orders WHERE id = ?').get(id))
      if (order === undefined) throw new Error(`no order ${id}`)
      const amount = /** @type {number} */ (args.amount)
      if (!(amount > 0) || amount > order.total) throw new Error(`amount must be more than 0 and at most the order total ${order.total}`)
      const refund = db.prepare('INSERT INTO refunds (order_id, amount, reason) VALUES (?, ?, ?)').run(id, amount, text(args.reason, 'reason'))
      db.prepare("UPDATE orders SET status = 'refund_pending' WHERE id = ?").run(id)
      return { refund_id: Number(refund.lastInsertRowid), order_id: id, amount }
    },
  },
  {
    name: 'sql_query',
    description: 'Runs a read-only SQL query (SQLite) against the shop database.',
    input_schema: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'], additionalProperties: false },
    run(args, ctx) {
      const statement = shop(ctx).prepare(text(args.sql, 'sql'))
      if (!statement.reader || !statement.readonly) throw new Error('only read-only queries are allowed')
      return statement.all()
    },
  },
  {
    name: 'list_policies',
    description: "Lists the support team's policy documents.",
    input_schema: { type: 'object', properties: {}, additionalProperties: false },
    async run(_args, ctx) {
      return (await readdir(path.join(workspace(ctx), 'policies'))).filter((f) => f.endsWith('.md')).map((f) => f.slice(0, -3)).sort()
    },
  },
  {
    name: 'read_policy',
    description: 'Reads one policy document by name (e.g. refunds).',
    input_schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
    async run(args, ctx) {
      const name = text(args.name, 'name')
      if (!/^[a-z0-9_-]+$/.test(name)) throw new Error(`not a policy name: ${name}`)
      return readFile(path.join(workspace(ctx), 'policies', `${name}.md`), 'utf8').catch(() => {
        throw new Error(`no policy named ${name}`)
      })
    },
  },
  {
    name: 'send_email',
    description: 'Sends an email from the support address (it lands in the outbox/ folder).',
    input_schema: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' }, body: { type: 'string' } },
      required: ['to', 'subject', 'body'],
      additionalProperties: false,
    },
    async run(args, ctx) {
      const to = text(args.to, 'to')
      if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(to)) throw new Error(`not an email address: ${to}`)
      const outbox = path.join(workspace(ctx), 'outbox')
      await mkdir(outbox, { recursive: true })
      const name = `${String((await readdir(outbox)).filter((f) => f.endsWith('.json')).length + 1).padStart(3, '0')}.json`
      await writeFile(path.join(outbox, name), `${JSON.stringify({ to, subject: text(args.subject, 'subject'), body: text(args.body, 'body') }, null, 2)}\n`)
      return { sent: `outbox/${name}` }
    },
  },
]

export default tools
