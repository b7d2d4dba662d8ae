// Sends malformed chat completions to its LLM gateway until the gateway stops answering (at most
// 1,000), then answers with how many were answered.
import { payload, send } from './protocol.mjs'

await payload()
let answered = 0
for (let i = 0; i < 1000; i++) {
  try {
    const res = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${process.env.OPENAI_API_KEY}`, 'content-type': 'application/json' },
      body: '{}',
    })
    await res.text()
    answered++
  } catch {
    break
  }
}
send({ type: 'final', output: `answered ${answered}` })
