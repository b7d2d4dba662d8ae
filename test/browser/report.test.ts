/**
 * `forge report` and `forge trace` pages in a real browser (headless Chromium): what is rendered
 * equals `forge stats --json`, the span tree collapses and expands, no console errors, no network
 * requests. Runs come from the real embedded stack through the CLI, as a user makes them.
 * Screenshots land in /tmp/forge-browser-*.png for a person to look at.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { WrittenReport } from '../../app/report.js'
import type { RunStats } from '../../app/stats.js'
import { forge, startTestStack, type TestStack } from '../helpers/stack.js'
import { chromiumPath, launchChromium, skipReason, watchPage } from './chromium.js'

const pct = (x: number | null) => (x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`)

describe.skipIf(!chromiumPath)(`report and trace pages in Chromium${skipReason}`, () => {
  let stack: TestStack
  let browser: Browser
  let out: string
  let stats: RunStats
  let report: WrittenReport
  let harnessReport: WrittenReport

  beforeAll(async () => {
    stack = await startTestStack('browser')
    out = mkdtempSync(join(tmpdir(), 'forge-browser-out-'))
    const run = forge(['run', '--suite', 'toy_math', '--attempts', '6', '--seed', 'browser', '--run-id', 'browser1', '--adapter-config', '{"skill":0.6}', '--json'], stack.env)
    expect(run.status, run.stderr).toBe(0)
    const crash = forge(
      ['run', '--suite', 'toy_math', '--attempts', '2', '--run-id', 'crashing', '--adapter', 'module', '--adapter-config', JSON.stringify({ path: join(import.meta.dirname, 'agents', 'throws.mjs') }), '--json'],
      stack.env,
    )
    expect(crash.status, crash.stderr).toBe(0)
    const statsRun = forge(['stats', '--run-id', 'browser1', '--json'], stack.env)
    stats = JSON.parse(statsRun.stdout) as RunStats
    const written = forge(['report', '--run-id', 'browser1', '--out', join(out, 'report.html'), '--json'], stack.env)
    expect(written.status, written.stderr).toBe(0)
    report = JSON.parse(written.stdout) as WrittenReport
    const harness = forge(['report', '--run-id', 'crashing', '--out', join(out, 'crashing.html'), '--json'], stack.env)
    expect(harness.status, harness.stderr).toBe(0)
    harnessReport = JSON.parse(harness.stdout) as WrittenReport
    browser = await launchChromium()
  })

  afterAll(async () => {
    await browser?.close()
    await stack?.down()
    if (out) rmSync(out, { recursive: true, force: true })
  })

  async function open(file: string): Promise<{ page: Page; watch: ReturnType<typeof watchPage> }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    // a missing element fails fast instead of waiting for it to appear: these pages are static
    page.setDefaultTimeout(5_000)
    const watch = watchPage(page)
    await page.goto(pathToFileURL(file).href)
    return { page, watch }
  }

  it('renders the figures of forge stats --json, with no console error and no request but the file', async () => {
    const { page, watch } = await open(report.out)
    const rows = page.locator('tr.task-row')
    expect(await rows.count()).toBe(stats.tasks.length)
    for (const task of stats.tasks) {
      const row = page.locator(`tr.task-row[data-task="${task.task_id}"]`)
      const cells = await row.locator('td').allTextContents()
      expect(cells.slice(0, 4)).toEqual([task.task_id, `${task.k}/${task.n}`, pct(task.rate), `[${task.low.toFixed(2)}, ${task.high.toFixed(2)}]`])
      expect(Number(await row.getAttribute('data-rate'))).toBe(task.rate)
    }
    const suiteRate = page.locator('#suite-rate-toy_math')
    expect(await suiteRate.locator('.v').textContent()).toBe(pct(stats.suite_rate))
    expect(Number(await suiteRate.getAttribute('data-rate'))).toBe(stats.suite_rate)
    for (const p of stats.suites[0]!.pass_k.filter((x) => x.k > 1)) {
      expect(await page.locator(`.passk[data-k="${p.k}"] .v`).textContent()).toBe(`${pct(p.pass_at_k)} / ${pct(p.pass_hat_k)}`)
    }
    for (const [outcome, n] of Object.entries(stats.outcomes)) {
      expect(await page.locator(`#outcomes tr[data-key="${outcome}"] td`).nth(1).textContent()).toBe(String(n))
    }
    // one Wilson error bar per task, drawn
    expect(await page.locator('#wilson-toy_math g.bar').count()).toBe(stats.tasks.length)
    expect(await page.locator('#wilson-toy_math').isVisible()).toBe(true)
    expect(await page.locator('#latency-histogram rect.bin').count()).toBeGreaterThan(0)
    expect(await page.locator('#harness-banner').count()).toBe(0)
    await page.screenshot({ path: '/tmp/forge-browser-report.png', fullPage: true })
    expect(watch.errors).toEqual([])
    expect(watch.requests).toEqual([pathToFileURL(report.out).href])
    await page.close()
  })

  it('leads with the harness-error banner when every attempt was a harness error', async () => {
    expect(harnessReport.harness_banner).toBe(true)
    const { page, watch } = await open(harnessReport.out)
    const banner = page.locator('#harness-banner')
    expect(await banner.isVisible()).toBe(true)
    expect(await banner.textContent()).toBe('Every attempt (6 of 6) was a harness error: the agent was never measured, and none of the rates below say anything about it.')
    await page.screenshot({ path: '/tmp/forge-browser-harness-banner.png' })
    expect(watch.errors).toEqual([])
    await page.close()
  })

  it('links each failed attempt to its trace page, whose tree collapses and expands', async () => {
    const { page, watch } = await open(report.out)
    const links = page.locator('a.trace-link')
    expect(await links.count()).toBe(report.traces_written)
    expect(report.traces_written).toBe(report.failed_listed)
    expect(report.failed_attempts).toBe(stats.attempts - (stats.outcomes['pass'] ?? 0))
    await links.first().click()
    await page.waitForURL(/-traces\//)
    const agent = page.locator('li.node[data-kind="agent"]').first()
    const firstChild = agent.locator(':scope > ul > li.node').first()
    expect(await firstChild.isVisible()).toBe(true)
    await agent.locator(':scope > .row > .toggle').click()
    expect(await firstChild.isVisible()).toBe(false)
    expect(await agent.locator(':scope > .row > .toggle').getAttribute('aria-expanded')).toBe('false')
    await agent.locator(':scope > .row > .toggle').click()
    expect(await firstChild.isVisible()).toBe(true)
    await page.locator('#collapse-all').click()
    expect(await page.locator('li.node:visible').count()).toBe(1)
    await page.locator('#expand-all').click()
    expect(await page.locator('li.node:visible').count()).toBe(await page.locator('li.node').count())
    // grading holds the verdict; the failure bucket is shown
    expect(await page.locator('li.node[data-kind="verdict"] .label').textContent()).toMatch(/^verdict: (fail|partial|violation) \(\w+\), (valid|degraded|invalid)$/)
    await page.screenshot({ path: '/tmp/forge-browser-trace.png', fullPage: true })
    await page.locator('#back').click()
    await page.waitForURL(/report\.html$/)
    expect(watch.errors).toEqual([])
    expect(watch.requests.every((url) => url.startsWith('file://'))).toBe(true)
    await page.close()
  })

  it('draws the same tree from forge trace --out as the terminal prints', async () => {
    const file = join(out, 'one.html')
    const written = forge(['trace', '--run-id', 'browser1', '--task', stats.tasks[0]!.task_id, '--attempt', '0', '--out', file], stack.env)
    expect(written.status, written.stderr).toBe(0)
    const text = forge(['trace', '--run-id', 'browser1', '--task', stats.tasks[0]!.task_id, '--attempt', '0'], stack.env)
    const treeLines = text.stdout.split('\n').filter((line) => /^\s*[▾•] /.test(line))
    const { page, watch } = await open(file)
    const nodes = page.locator('li.node')
    expect(await nodes.count()).toBe(treeLines.length)
    const depths = await nodes.evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-depth'))))
    expect(depths).toEqual(treeLines.map((line) => (line.length - line.trimStart().length) / 2))
    expect(watch.errors).toEqual([])
    await page.close()
  })
})
