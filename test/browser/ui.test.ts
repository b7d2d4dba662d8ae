/**
 * `forge ui` in headless Chromium: a user clicks from the runs list to a run, a task, the next page
 * of attempts and an attempt's trace, and back; no console errors, no request leaves the server.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUi, type UiServer } from '../../app/ui.js'
import { resolveConfig } from '../../stack/config.js'
import { openClickHouse } from '../../store/clickhouse.js'
import { migrate } from '../../store/migrations.js'
import { storeSyntheticRun } from '../integration/report-fixture.js'
import { chromiumPath, launchChromium, skipReason, watchPage } from './chromium.js'

describe.skipIf(!chromiumPath)(`forge ui in Chromium${skipReason}`, () => {
  let home: string
  let ui: UiServer
  let browser: Browser

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'forge-ui-browser-'))
    const config = resolveConfig({ ...process.env, FORGE_HOME: home, FORGE_TEMPORAL_ADDRESS: '', FORGE_NATS_URL: '', FORGE_CLICKHOUSE_URL: '' })
    const client = await openClickHouse({ kind: 'embedded', path: config.storePath })
    await migrate(client)
    await storeSyntheticRun(client, 'uib', ['alpha', 'beta'], 25)
    await client.close()
    ui = await startUi(config, { host: '127.0.0.1', port: 0, pageSize: 10 })
    browser = await launchChromium()
  })

  afterAll(async () => {
    await browser?.close()
    await ui?.close()
    if (home) rmSync(home, { recursive: true, force: true })
  })

  it('browses runs → run → task → next page → attempt trace and back', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.setDefaultTimeout(10_000)
    const watch = watchPage(page)
    await page.goto(ui.url)
    await page.locator('#runs a', { hasText: 'uib' }).click()
    await page.waitForURL(/\/runs\/uib$/)
    expect(await page.locator('tr.task-row').count()).toBe(2)
    expect(await page.locator('#harness-banner').isVisible()).toBe(true)
    await page.screenshot({ path: '/tmp/forge-browser-ui-run.png', fullPage: true })
    await page.locator('#tasks a', { hasText: 'beta' }).click()
    await page.waitForURL(/\/runs\/uib\/tasks\/beta$/)
    expect(await page.locator('tr.attempt-row').count()).toBe(10)
    await page.locator('#next').click()
    await page.waitForURL(/after=beta%2F9/)
    expect(await page.locator('tr.attempt-row').first().getAttribute('data-uid')).toBe('uib/cfg/beta/10')
    await page.locator('tr.attempt-row a').first().click()
    await page.waitForURL(/\/attempts\//)
    expect(await page.locator('li.node').count()).toBeGreaterThan(3)
    await page.locator('#collapse-all').click()
    expect(await page.locator('li.node:visible').count()).toBe(1)
    await page.screenshot({ path: '/tmp/forge-browser-ui-trace.png' })
    await page.locator('#back').click()
    await page.waitForURL(/\/runs\/uib\/tasks\/beta$/)
    expect(watch.errors).toEqual([])
    expect(watch.requests.every((url) => url.startsWith(ui.url))).toBe(true)
    await page.close()
  })

  it('a page whose name resolves to 127.0.0.1 (DNS rebinding) reads nothing: every request it makes is refused', async () => {
    const port = new URL(ui.url).port
    // the browser resolves the attacker's name to this machine, as a rebinding DNS server would make it;
    // Chromium's own Private Network Access check is off, as Firefox and Safari have none (measured:
    // with it off and no Host check, the page's fetch read the server's answer)
    const rebinding = await launchChromium([
      '--host-resolver-rules=MAP rebind.attacker.example 127.0.0.1',
      '--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks',
    ])
    try {
      const page = await rebinding.newPage()
      // the attacker's own page, served before the name was rebound (its document only; what its script
      // fetches goes to the network, where the name now means 127.0.0.1)
      const origin = `http://rebind.attacker.example:${port}`
      await page.route(`${origin}/`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>cat pictures</title>' }))
      await page.goto(`${origin}/`)
      const read = await page.evaluate(async () => {
        const res = await fetch('/runs/uib?format=json')
        return { status: res.status, body: await res.text() }
      })
      expect(read.status).toBe(403)
      expect(read.body).toContain(`forge ui refused a request for host "rebind.attacker.example:${port}"`)
      expect(read.body).not.toContain('alpha')
      const opened = await page.goto(`${origin}/runs/uib`)
      expect(opened?.status()).toBe(403)
      // the same browser addressing the server by IP address is served
      expect((await page.goto(`${ui.url}?format=json`))?.status()).toBe(200)
    } finally {
      await rebinding.close()
    }
  })
})
