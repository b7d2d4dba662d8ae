// A factory-style module agent: module-level and instance-level counters.
let moduleInvocations = 0

export class CounterAgent {
  instanceInvocations = 0
  invoke(payload) {
    moduleInvocations += 1
    this.instanceInvocations += 1
    return { output: payload.input.value, self_report: JSON.stringify({ module: moduleInvocations, instance: this.instanceInvocations }) }
  }
}

export const notAnAgent = 42
