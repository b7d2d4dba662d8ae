// the configuration lives in config/ (every FORGE_* setting, validated, with its default)
export { resolveConfig, type ForgeConfig } from '../config/index.js'
