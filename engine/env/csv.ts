/** A small RFC 4180 CSV reader for seeding fixtures: quoted fields, doubled quotes, CRLF or LF. */

/** Rows of fields; a trailing newline does not make an empty last row. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let field = ''
  let quoted = false
  let i = 0
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  while (i < source.length) {
    const c = source[i] as string
    if (quoted) {
      if (c === '"') {
        if (source[i + 1] === '"') {
          field += '"'
          i += 2
          continue
        }
        quoted = false
      } else field += c
      i += 1
      continue
    }
    if (c === '"' && field === '') quoted = true
    else if (c === ',') {
      row.push(field)
      field = ''
    } else if (c === '\n' || c === '\r') {
      row.push(field)
      rows.push(row)
      row = []
      field = ''
      if (c === '\r' && source[i + 1] === '\n') i += 1
    } else field += c
    i += 1
  }
  if (quoted) throw new Error('unterminated quoted field')
  if (field !== '' || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  return rows
}
