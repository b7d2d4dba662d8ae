// A module agent that always throws: every attempt becomes a harness error.
export default {
  async invoke() {
    throw new Error('the agent under test crashed on purpose')
  },
}
