/** Headless Chromium for browser tests: Debian's `chromium` (or FORGE_CHROMIUM) driven by playwright-core. */
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'

/** The Chromium binary, or undefined when this machine has none (browser tests then skip, saying so). */
export const chromiumPath: string | undefined = [process.env['FORGE_CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (p): p is string => p !== undefined && p !== '' && existsSync(p),
)

export const skipReason = chromiumPath ? '' : ' — SKIPPED: no Chromium found (install Debian\'s chromium or set FORGE_CHROMIUM to its path)'
if (!chromiumPath) console.warn(`browser tests skipped: no Chromium at /usr/bin/chromium (install Debian's chromium, or set FORGE_CHROMIUM)`)

export function launchChromium(args: readonly string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath!, args: ['--no-sandbox', ...args] })
}

/** What a page did besides rendering: console errors, uncaught exceptions and every request it made. */
export interface PageWatch {
  errors: string[]
  requests: string[]
}

export function watchPage(page: Page): PageWatch {
  const watch: PageWatch = { errors: [], requests: [] }
  page.on('console', (message) => {
    if (message.type() === 'error') watch.errors.push(message.text())
  })
  page.on('pageerror', (error) => watch.errors.push(String(error)))
  page.on('request', (request) => watch.requests.push(request.url()))
  return watch
}
