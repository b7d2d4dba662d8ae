/** The judge task queue's name: FORGE_JUDGE_TASK_QUEUE, else `forge-judge` (the same on `forge run` and the workers). */
export function judgeTaskQueue(env: NodeJS.ProcessEnv = process.env): string {
  return env['FORGE_JUDGE_TASK_QUEUE'] || 'forge-judge'
}
