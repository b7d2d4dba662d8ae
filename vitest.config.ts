import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // integration tests share one embedded stack per file; files run one at a time on 2 cores
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 180_000,
    reporters: ['default'],
    // a forge run leaves a warm worker for the next (stack/warm-workers.ts): not in tests, which start
    // hundreds of runs in homes they remove; test/integration/warm-workers.test.ts turns it on
    // and a warm worker's JIT warm-up (app/jit-warmup.ts) would spend CPU under other tests' feet: the
    // tests of it turn it on; so does an ingester's (workers/ingester.ts), ~1 s of CPU as each test's stack starts
    env: { FORGE_WARM_WORKERS: '0', FORGE_WARM_WORKER_WARMUP: '0', FORGE_INGESTER_WARMUP: '0' },
  },
})
