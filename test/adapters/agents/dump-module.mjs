// A module agent that answers with everything it was handed, and what its process shows it.
export default function createDumper() {
  return {
    invoke(payload, tools, context) {
      return {
        output: JSON.stringify({
          payload,
          specs: tools.specs,
          toolsKeys: Object.keys(tools),
          contextKeys: Object.keys(context),
          seed: context.seed,
          argv: process.argv,
          env: process.env,
        }),
      }
    },
  }
}
