// Tools reach this attempt's database only: ctx.env.db is the task's sqlite fixture.
export const tools = [
  {
    name: 'sql_query',
    description: 'Runs one read-only SQL query and returns the rows.',
    input_schema: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'] },
    run: (args, ctx) => {
      const statement = ctx.env.db.db.prepare(args.sql)
      if (!statement.reader || !statement.readonly) throw new Error('sql_query only reads; use sql_execute to change data')
      return statement.all()
    },
  },
  {
    name: 'sql_execute',
    description: 'Runs one SQL statement that changes the database.',
    input_schema: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'] },
    run: (args, ctx) => ({ changes: ctx.env.db.db.prepare(args.sql).run().changes }),
  },
]
