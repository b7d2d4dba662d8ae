// the workflow bundle's entry point: only workflow functions are exported from here
export { RunWorkflow, ShardWorkflow } from './run.js'
export { SequentialTaskWorkflow } from './sequential.js'
export { SweepWorkflow } from './sweep.js'
export { WarmupWorkflow } from './warmup.js'
