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
import type { RecoveryCurve } from '../../core/fault-stats.js'
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
      // in the worker's process (--no-sandbox) the agent's throw is the adapter's: a harness error. (Sandboxed, the
      // agent's process dies instead, and that is the agent's failure: no_answer.)
      ['run', '--suite', 'toy_math', '--attempts', '2', '--run-id', 'crashing', '--adapter', 'module', '--no-sandbox', '--adapter-config', JSON.stringify({ path: join(import.meta.dirname, 'agents', 'throws.mjs') }), '--json'],
      stack.env,
    )
    // every attempt a harness error: the run is degraded (exit code 7)
    expect(crash.status, crash.stderr).toBe(7)
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

  it('draws the recovery curve of a fault sweep from its runs: one point per fail rate, as forge stats --fault-sweep says', async () => {
    const sweep = forge(['run', '--suite', 'toy_math', '--attempts', '4', '--seed', 'swept', '--run-id', 'swept', '--fault-sweep', '0,0.3,0.6', '--fault-kinds', '500', '--json'], stack.env)
    expect(sweep.status, sweep.stderr).toBe(0)
    const { sweep_id: sweepId } = JSON.parse(sweep.stdout) as { sweep_id: string }
    const curveRun = forge(['stats', '--fault-sweep', sweepId, '--json'], stack.env)
    expect(curveRun.status, curveRun.stderr).toBe(0)
    const curve = JSON.parse(curveRun.stdout) as RecoveryCurve
    expect(curve.points.map((p) => p.rate)).toEqual([0, 0.3, 0.6])
    const file = join(out, 'swept.html')
    // the middle run's report: the curve comes from the whole sweep, its own point marked
    const written = forge(['report', '--run-id', 'swept-f1', '--out', file, '--json'], stack.env)
    expect(written.status, written.stderr).toBe(0)
    const { page, watch } = await open(file)
    const rows = page.locator('#sweep-points tr.sweep-point')
    expect(await rows.count()).toBe(3)
    for (const [i, point] of curve.points.entries()) {
      const row = rows.nth(i)
      expect(Number(await row.getAttribute('data-fail-rate'))).toBe(point.rate)
      expect(await row.getAttribute('data-run')).toBe(point.run_id)
      expect([Number(await row.getAttribute('data-k')), Number(await row.getAttribute('data-n'))]).toEqual([point.pass.k, point.pass.n])
      expect(Number(await row.getAttribute('data-low'))).toBe(point.pass.low)
      expect(Number(await row.getAttribute('data-high'))).toBe(point.pass.high)
      expect(await row.getAttribute('data-current')).toBe(point.run_id === 'swept-f1' ? 'true' : 'false')
      const cells = await row.locator('td').allTextContents()
      expect([cells[2], cells[3], cells[4]]).toEqual([`${point.pass.k}/${point.pass.n}`, pct(point.pass.rate), `[${point.pass.low.toFixed(2)}, ${point.pass.high.toFixed(2)}]`])
    }
    // the chart: one point with its Wilson error bar per fail rate, this run's marked
    const points = page.locator('#sweep-curve g.point')
    expect(await points.count()).toBe(3)
    expect(await points.nth(1).locator('title').textContent()).toBe(
      `fail rate 30.0% (run swept-f1): ${curve.points[1]!.pass.k}/${curve.points[1]!.pass.n} = ${pct(curve.points[1]!.pass.rate)}, Wilson 95% [${curve.points[1]!.pass.low.toFixed(2)}, ${curve.points[1]!.pass.high.toFixed(2)}]`,
    )
    expect(await points.nth(1).locator('text').textContent()).toBe('30.0% ◆')
    expect(await page.locator('#sweep-curve').isVisible()).toBe(true)
    await page.locator('#recovery').screenshot({ path: '/tmp/forge-browser-sweep-curve.png' })
    // the fault-free run of the sweep met no fault, and still shows the sweep's curve
    const clean = forge(['report', '--run-id', 'swept-f0', '--out', join(out, 'swept0.html'), '--json'], stack.env)
    expect(clean.status, clean.stderr).toBe(0)
    const first = await open(join(out, 'swept0.html'))
    expect(await first.page.locator('#sweep-points tr.sweep-point').count()).toBe(3)
    expect(await first.page.locator('#sweep-points tr.sweep-point[data-current="true"]').getAttribute('data-run')).toBe('swept-f0')
    expect([...watch.errors, ...first.watch.errors]).toEqual([])
    expect([...watch.requests, ...first.watch.requests].every((url) => url.startsWith('file://'))).toBe(true)
    await first.page.close()
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
