/**
 * oclif's `execute`, as bin/run.js loads it: from the CLI bundle (scripts/bundle-cli.mjs), which holds
 * @oclif/core and the packages it loads, so bin/run.js and every command share one copy of oclif and
 * a start-up reads one bundled module instead of ~170 files from node_modules (issue 15). The warm CLI
 * (cli/warm-cli.ts) loads oclif's `Config` once, before the run it serves.
 */
export { Config, execute } from '@oclif/core'
